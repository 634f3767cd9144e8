package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/record"
	"github.com/pagemux/pagemux/rules"
	"github.com/pagemux/pagemux/tools"
)

// minRecordBytes is the least --record-max-bytes: a few steps with their
// screenshots.
const minRecordBytes = 64 << 10

// recordConfig is what --record and --record-max-bytes say.
type recordConfig struct {
	dir      string
	maxBytes int64
}

// addRecordFlags registers --record and --record-max-bytes on fs.
func addRecordFlags(fs *flag.FlagSet, c *recordConfig) {
	fs.StringVar(&c.dir, "record", "", "keep a record of each agent session in `DIR` (made private, 0700): every call with its arguments (secrets by name), answer (masked), outcome, timing and lock wait, and after each navigation or input the page's snapshot and a screenshot (none while the page shows a secret's value); replay them at /ui/records/, turn one into smoke steps with: pagemux record export DIR/RECORD --steps")
	fs.Int64Var(&c.maxBytes, "record-max-bytes", record.DefaultMaxBytes, "with --record, the most `BYTES` one session's record takes; past it the record says it stopped and keeps nothing more")
}

// check refuses a cap too small to hold a step.
func (c *recordConfig) check() error {
	if c.dir != "" && c.maxBytes < minRecordBytes {
		return fmt.Errorf("--record-max-bytes %d: a record needs %d bytes at least (a few steps with their screenshots); the default is %d", c.maxBytes, minRecordBytes, record.DefaultMaxBytes)
	}
	return nil
}

// observers are the Recorder of --record as tools' observers, made ready
// (its directory made); none without --record. sc names the secrets each
// token's agents may type; engine, if set, the agents whose rules entry
// says record: false.
func (c *recordConfig) observers(b *browser.Browser, log *slog.Logger, sc *secretsConfig, engine *rules.Engine) ([]tools.Observer, error) {
	if c.dir == "" {
		return nil, nil
	}
	names := func(token string) []string {
		if s, ok := sc.byToken[token]; ok {
			return s.Names()
		}
		return sc.all.Names()
	}
	r, err := record.New(record.Options{Dir: c.dir, MaxBytes: c.maxBytes, Browser: b, Log: log, SecretNames: names,
		Want: recordedBy(engine)})
	if err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	log.Info("recording each session", "dir", c.dir, "max_bytes", c.maxBytes)
	return []tools.Observer{r}, nil
}

// viewer is the records' viewer for the live view (ui.Options.Records),
// nil without --record.
func (c *recordConfig) viewer() http.Handler {
	if c.dir == "" {
		return nil
	}
	return record.Handler(c.dir)
}

// recordedBy says, for a call, whether the rules in force (engine, nil for
// none) keep its agent's sessions in the records: an agent is named as the
// rules name it over HTTP (tools' ruleAgent): its token's name, else the
// name it gave, else anonymous. On stdio (no agent) --record alone decides:
// the observers do not see the MCP client's name the rules match there.
func recordedBy(engine *rules.Engine) func(tools.CallInfo) bool {
	if engine == nil {
		return nil
	}
	return func(info tools.CallInfo) bool {
		name, ok := strings.CutPrefix(info.Agent, "agent:")
		switch {
		case info.Token != "":
			name = info.Token
		case info.Agent == "":
			return true
		case !ok:
			name = agents.Anonymous
		}
		return engine.Set().Records(name)
	}
}
