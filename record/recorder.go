package record

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/tools"
)

// DefaultMaxBytes caps one record unless Options.MaxBytes says otherwise:
// some hundreds of steps with their screenshots.
const DefaultMaxBytes = 50 << 20

// maxAnswer cuts the answer text a step keeps, in bytes: a snapshot's
// answer may be megabytes, and its snapshot file is kept beside anyway.
const maxAnswer = 64 << 10

// idleSession is how long a session sends nothing before its Recorder
// forgets it: a call after that begins a new record.
const idleSession = time.Hour

// Options configure a Recorder.
type Options struct {
	// Dir holds the records, one directory each; it is made (0700) if it
	// is not there.
	Dir string
	// MaxBytes caps each record's files together; zero or less:
	// DefaultMaxBytes.
	MaxBytes int64
	// Browser is where the pages of the calls are: before a click or a fill
	// acts, the Recorder finds a CSS selector for its element there (for
	// Export). nil: no selectors.
	Browser *browser.Browser
	// Log receives what went wrong writing records; nil discards it.
	Log *slog.Logger
	// Want, if set, says whether a call's session is recorded (by its
	// agent); nil: every session is.
	Want func(tools.CallInfo) bool
	// SecretNames, if set, are the names of the secrets the agents of a
	// token (--auth-token's name, "" for none) may type: a fill's value
	// that is one bare NAME is kept as ${NAME}, as Export needs it.
	SecretNames func(token string) []string
}

// Recorder writes a record of each session as a tools.Observer. Its zero
// value is not usable: see New. It never calls a tool; it reads the page of
// a call only while the call holds its locks.
type Recorder struct {
	o   Options
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	// selectors are what Started found for the calls still running, by
	// call ID.
	selectors map[uint64][]string
	seq       int // names records made in the same second apart
}

// session is the record of one session being written.
type session struct {
	mu      sync.Mutex
	dir     string
	steps   int
	size    int64
	stopped bool
	last    time.Time // the last call's end, to forget an idle session
}

// New makes dir if need be and returns a Recorder that writes there.
func New(o Options) (*Recorder, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("record: no directory given")
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Recorder{o: o, log: log, sessions: map[string]*session{}, selectors: map[uint64][]string{}}, nil
}

// Dir is the directory the records are in.
func (r *Recorder) Dir() string { return r.o.Dir }

// Queued does nothing: a record keeps a call when it ends.
func (r *Recorder) Queued(tools.CallInfo) {}

// Started finds, for a click or fill by uid, a CSS selector of each element
// it names, while the call holds its locks and before it acts (a click may
// take its element away). It costs one script in the page, bounded by
// selectorWait.
func (r *Recorder) Started(ctx context.Context, info tools.CallInfo) {
	uids := elementUIDs(info.Tool, info.Args)
	if r.o.Browser == nil || info.Page == 0 || len(uids) == 0 || !r.wants(info) {
		return
	}
	p, err := r.o.Browser.Page(info.Page)
	if err != nil || p.Dialog() != nil {
		return // the call will say why; a dialog would hold the script up
	}
	sels := findSelectors(ctx, p, uids)
	r.mu.Lock()
	r.selectors[info.ID] = sels
	r.mu.Unlock()
}

// Ended writes the call as the next step of its session's record, with the
// page's snapshot and screenshot after an action (captures), every text
// through e.Mask.
func (r *Recorder) Ended(ctx context.Context, e tools.CallEnd, page *browser.Page) {
	r.mu.Lock()
	sels := r.selectors[e.ID]
	delete(r.selectors, e.ID)
	r.mu.Unlock()
	if !r.wants(e.CallInfo) {
		return
	}
	mask := e.Mask
	if mask == nil {
		mask = func(s string) string { return s }
	}
	for i, sel := range sels {
		sels[i] = mask(sel) // the page's own attributes
	}
	args := e.Args
	if r.o.SecretNames != nil {
		args = bareSecrets(e.Tool, args, r.o.SecretNames(e.Token))
	}
	st := Step{Call: e.ID, Tool: e.Tool, Args: args, Page: e.Page, Locks: e.Locks, Arrived: e.Arrived,
		WaitedMs: ms(e.Waited), TookMs: ms(e.Took), Outcome: e.Outcome, Answer: mask(answerText(e.Result)), Selectors: sels}
	s, err := r.session(e.CallInfo)
	if err != nil {
		r.log.Warn("record: cannot begin a record", "agent", e.Agent, "error", err)
		return
	}
	var c capture
	if page != nil && !page.Closed() {
		st.URL, st.Title = mask(page.URL()), mask(page.Title())
		if captures[e.Tool] && e.Outcome != "cancelled" && !s.isStopped() {
			c = capturePage(ctx, page, mask)
			st.Note = c.note
			st.Title, st.URL = cmpOr(c.title, st.Title), cmpOr(c.url, st.URL)
		}
	}
	if err := s.write(st, c, r.o.MaxBytes); err != nil {
		r.log.Warn("record: cannot write a step", "record", s.dir, "error", err)
	}
}

// wants says whether the call's session is recorded.
func (r *Recorder) wants(info tools.CallInfo) bool {
	return r.o.Want == nil || r.o.Want(info)
}

// session returns the record of info's session, begun at its first call.
func (r *Recorder) session(info tools.CallInfo) (*session, error) {
	key := info.Agent + "\x00" + info.Session
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if s, ok := r.sessions[key]; ok {
		s.mu.Lock()
		s.last = now
		s.mu.Unlock()
		return s, nil
	}
	r.forgetIdleLocked(now)
	m := Meta{Agent: info.Agent, Token: info.Token, Session: info.Session, Started: now.UTC()}
	label := safeLabel(cmpOr(info.Token+"-"+agentName(info.Agent), info.Agent, "stdio"))
	var dir string
	for {
		r.seq++
		m.ID = fmt.Sprintf("%s-%s-%d", now.UTC().Format("20060102T150405Z"), label, r.seq)
		dir = filepath.Join(r.o.Dir, m.ID)
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			break
		}
		if !os.IsExist(err) {
			return nil, err
		}
	}
	b, _ := json.Marshal(m)
	if err := writeFile(filepath.Join(dir, metaFile), b); err != nil {
		return nil, err
	}
	s := &session{dir: dir, size: int64(len(b)), last: now}
	r.sessions[key] = s
	return s, nil
}

// forgetIdleLocked drops the sessions that sent nothing for idleSession,
// so that a long run does not keep every session it ever saw.
func (r *Recorder) forgetIdleLocked(now time.Time) {
	for k, s := range r.sessions {
		s.mu.Lock()
		idle := now.Sub(s.last) > idleSession
		s.mu.Unlock()
		if idle {
			delete(r.sessions, k)
		}
	}
}

// isStopped reports whether the record stopped at its cap: a call after
// that pays for no capture.
func (s *session) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// write appends st to the record with c's files, or, when they would take
// the record past max, a last line that says it stopped.
func (s *session) write(st Step, c capture, max int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.steps++
	st.N = s.steps
	if c.snapshot != "" {
		st.Snapshot = fmt.Sprintf("%05d.txt", st.N)
	}
	if len(c.screenshot) > 0 {
		st.Screenshot = fmt.Sprintf("%05d.jpg", st.N)
	}
	line, err := json.Marshal(st)
	if err != nil {
		return err
	}
	need := int64(len(line)+1) + int64(len(c.snapshot)) + int64(len(c.screenshot))
	if s.size+need > max {
		s.stopped = true
		stop, _ := json.Marshal(Step{N: st.N, Stopped: fmt.Sprintf("the record reached its cap of %d bytes (--record-max-bytes): the calls after step %d are not in it", max, st.N-1)})
		return appendLine(filepath.Join(s.dir, stepsFile), stop)
	}
	if st.Snapshot != "" {
		if err := writeFile(filepath.Join(s.dir, st.Snapshot), []byte(c.snapshot)); err != nil {
			return err
		}
	}
	if st.Screenshot != "" {
		if err := writeFile(filepath.Join(s.dir, st.Screenshot), c.screenshot); err != nil {
			return err
		}
	}
	s.size += need
	return appendLine(filepath.Join(s.dir, stepsFile), line)
}

// writeFile writes a new private file.
func writeFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// appendLine appends line and a newline to the private file at path.
func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// bareSecrets returns a fill's or fill_form's arguments with each value
// that is a bare secret's name (tools take one so where a field holds one
// value) written ${NAME}; others' as they are.
func bareSecrets(tool string, args json.RawMessage, names []string) json.RawMessage {
	if (tool != "fill" && tool != "fill_form") || len(names) == 0 {
		return args
	}
	var v map[string]any
	if json.Unmarshal(args, &v) != nil {
		return args
	}
	named := func(m map[string]any) bool {
		if val, ok := m["value"].(string); ok && slices.Contains(names, val) {
			m["value"] = "${" + val + "}"
			return true
		}
		return false
	}
	changed := named(v)
	if els, ok := v["elements"].([]any); ok {
		for _, el := range els {
			if m, ok := el.(map[string]any); ok && named(m) {
				changed = true
			}
		}
	}
	if !changed {
		return args
	}
	b, err := json.Marshal(v)
	if err != nil {
		return args
	}
	return b
}

// answerText is the text of an answer, an image as "[image]", cut to
// maxAnswer bytes.
func answerText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case mcp.TextContent:
			b.WriteString(c.Text)
		case mcp.ImageContent:
			b.WriteString("[image]")
		default:
			b.WriteString("[content]")
		}
	}
	return cut(b.String(), maxAnswer)
}

// cut shortens s to at most n bytes, on a rune's edge, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("\n… (cut: %d bytes in all)", len(s))
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// agentName is the agent name of an identity ("token:t/agent:NAME"), "" for
// none.
func agentName(id string) string {
	_, name, _ := strings.Cut(id, "agent:")
	return name
}

// safeLabel makes s a part of a directory name: letters, digits, '_' and
// '-' only (no dots: nothing that reads as a path), at most 40 bytes.
func safeLabel(s string) string {
	b := []byte(strings.Trim(s, "-"))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	if len(b) == 0 {
		return "agent"
	}
	return string(b)
}

// cmpOr is the first of ss that is neither empty nor a bare "-".
func cmpOr(ss ...string) string {
	for _, s := range ss {
		if strings.Trim(s, "-") != "" {
			return s
		}
	}
	return ""
}
