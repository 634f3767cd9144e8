package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pagemux/pagemux/internal/proc"
)

// modeResult is everything measured against one server in one lock mode.
type modeResult struct {
	Mode         string       `json:"mode"`
	PID          int          `json:"pid,omitempty"`
	InitializeMS float64      `json:"initialize_ms"`
	FirstPageMS  float64      `json:"first_new_page_ms"` // includes Chrome's launch
	Evaluate     *series      `json:"evaluate_script"`
	Click        *series      `json:"click"`
	Fill         *series      `json:"fill"`
	BWhileA      *holdResult  `json:"b_while_a,omitempty"`
	BWhileAudit  *holdResult  `json:"b_while_audit,omitempty"`    // audit.go
	Bursts       *burstResult `json:"pipelined_bursts,omitempty"` // burst.go
	RSSPeakMB    float64      `json:"server_rss_peak_mb"`
	RSSEndMB     float64      `json:"server_rss_end_mb"`
	CloseMS      float64      `json:"close_ms"`
	Goals        []goal       `json:"goals"`
	Anomalies    []string     `json:"anomalies,omitempty"`
	Failure      string       `json:"failure,omitempty"`
}

// holdResult is the "B while A" figure: calls on page B while page A runs a
// long script.
type holdResult struct {
	B       *series `json:"b_calls"`
	FirstMS float64 `json:"first_b_ms"`
	// FirstEndMS is when the first B call was answered, counted from when
	// A's call was sent: what an agent sees as B's wait behind A.
	FirstEndMS float64 `json:"first_b_answered_after_a_sent_ms"`
	AMS        float64 `json:"a_ms"` // the hold call's own round trip
	AError     string  `json:"a_error,omitempty"`
	Notices    int     `json:"b_waited_notices"` // B answers with a "Waited N ms" line
	Overlaps   int     `json:"b_done_before_a"`  // B calls that finished while A still ran
}

func (r *modeResult) anomaly(format string, args ...any) {
	r.Anomalies = append(r.Anomalies, fmt.Sprintf(format, args...))
}

const (
	warmups   = 3
	maxErrors = 3 // a phase stops after this many failed calls, so a broken server can't stretch the run
	maxBCalls = 100000
	// settle lets page A's call reach the server and take its lock before
	// page B's first call is sent; the server's lock state can't be seen
	// from outside.
	settle = 50 * time.Millisecond
)

// bench runs every measurement against a fresh server in one lock mode.
func bench(ctx context.Context, cfg *config, bin, siteURL, mode string, log *slog.Logger) *modeResult {
	r := &modeResult{Mode: mode, Evaluate: &series{Name: "evaluate_script () => 1"},
		Click: &series{Name: `click button "Submit"`}, Fill: &series{Name: `fill textbox "Name"`}}
	if err := r.run(ctx, cfg, bin, siteURL, log); err != nil {
		r.Failure = err.Error()
		log.Error("mode failed", "mode", mode, "err", err)
	}
	if cfg.bursts > 0 {
		var err error
		if r.Bursts, err = burstOrder(ctx, bin, siteURL, mode, cfg.bursts, log); err != nil {
			r.anomaly("pipelined bursts: %v", err)
		}
		if r.Bursts.OutOfOrder > 0 {
			r.anomaly("pipelined bursts: %d of %d ran out of order (%s)", r.Bursts.OutOfOrder, r.Bursts.Bursts, r.Bursts.FirstBad)
		}
	}
	for _, s := range []*series{r.Evaluate, r.Click, r.Fill} {
		s.finish()
		if s.Slow > 0 {
			r.anomaly("%s: %d call(s) over max(%d×p50, %v); max %s", s.Name, s.Slow, slowFactor, slowFloor, fmtMS(s.Max))
		}
	}
	for _, h := range []*holdResult{r.BWhileA, r.BWhileAudit} {
		if h != nil {
			h.B.finish()
		}
	}
	r.Goals = goals(r)
	return r
}

func (r *modeResult) run(ctx context.Context, cfg *config, bin, siteURL string, log *slog.Logger) error {
	log.Info("starting server", "bin", bin, "args", "--lock-mode="+r.Mode)
	start := time.Now()
	s, err := startServer(ctx, bin, []string{"--lock-mode=" + r.Mode}, cfg.callTimeout, log)
	if err != nil {
		return err
	}
	r.InitializeMS = ms(time.Since(start))
	defer func() {
		// Read before the server ends, even when a phase failed.
		var chrome []proc.Proc
		if r.PID != 0 {
			chrome = proc.Descendants(r.PID)
			log.Info("server memory and children", "mode", r.Mode, "pid", r.PID, "children", len(chrome), "profiles", profileDirs(chrome))
			var merr error
			if r.RSSPeakMB, r.RSSEndMB, merr = memory(r.PID); merr != nil {
				r.anomaly("reading the server's memory: %v", merr)
			}
		}
		took, cerr := s.close()
		r.CloseMS = ms(took)
		if cerr != nil {
			r.anomaly("closing the server: %v", cerr)
		}
		if took > 3*time.Second {
			r.anomaly("the server took %s to exit after its stdin closed", fmtMS(ms(took)))
		}
		if left := survivors(chrome, 5*time.Second); len(left) > 0 {
			r.anomaly("%d of the server's %d child processes still run 5 s after it ended (first: pid %d %s)", len(left), len(chrome), left[0].PID, left[0].Comm)
		}
		for _, d := range profileDirs(chrome) {
			if _, err := os.Stat(d); err == nil && isTemp(d) {
				r.anomaly("temporary Chrome profile left behind: %s", d)
			}
		}
		for _, line := range matchingLines(s.stderr, "level=WARN", "level=ERROR", "panic") {
			r.anomaly("server stderr: %s", line)
		}
	}()
	if r.PID, err = s.pid(bin); err != nil { // RSS is then not measured
		r.anomaly("server pid: %v", err)
	}

	log.Info("opening page A", "mode", r.Mode)
	a, took, err := openPage(ctx, s, cfg, siteURL+"/form.html?page=a")
	if err != nil {
		return err
	}
	r.FirstPageMS = ms(took)
	fn := func(v string) map[string]any { return map[string]any{"pageId": a, "function": v} }

	for range warmups {
		if rep := s.call(ctx, cfg.callTimeout, "evaluate_script", fn("() => 1")); rep.err != nil || rep.isError {
			return fmt.Errorf("warm-up evaluate_script: %s", rep.failure())
		}
	}
	log.Info("evaluate_script", "mode", r.Mode, "calls", cfg.n)
	repeat(ctx, s, cfg, r, r.Evaluate, cfg.n, "evaluate_script", func(int) map[string]any { return fn("() => 1") }, "```json\n1\n```")

	snap := s.call(ctx, cfg.callTimeout, "take_snapshot", map[string]any{"pageId": a})
	if snap.err != nil || snap.isError {
		return fmt.Errorf("take_snapshot: %s", snap.failure())
	}
	button, input := uidOf(snap.text, `button "Submit"`), uidOf(snap.text, `textbox "Name"`)
	if button == "" || input == "" {
		return fmt.Errorf("no Submit button or Name textbox in the snapshot:\n%s", snap.text)
	}
	k := max(cfg.n/4, 1)
	log.Info("click and fill", "mode", r.Mode, "calls", k, "button", button, "input", input)
	repeat(ctx, s, cfg, r, r.Click, k, "click", func(int) map[string]any {
		return map[string]any{"pageId": a, "uid": button}
	}, "Successfully clicked on the element")
	last := ""
	repeat(ctx, s, cfg, r, r.Fill, k, "fill", func(i int) map[string]any {
		last = fmt.Sprintf("bench %d", i)
		return map[string]any{"pageId": a, "uid": input, "value": last}
	}, "Successfully filled out the element")
	r.checkPage(ctx, s, cfg, a, last)

	log.Info("opening page B", "mode", r.Mode)
	b, _, err := openPage(ctx, s, cfg, siteURL+"/form.html?page=b")
	if err != nil {
		return err
	}
	log.Info("B while A", "mode", r.Mode, "hold", cfg.hold)
	r.BWhileA = holdAndProbe(ctx, s, cfg, a, b)
	r.checkHold(cfg)
	if cfg.audit {
		log.Info("B while A is audited", "mode", r.Mode)
		r.auditAndProbe(ctx, s, cfg, a, b)
	}

	return ctx.Err()
}

// isTemp says whether dir is a temporary profile pagemux should remove, not
// one kept on purpose (--isolated=false, --user-data-dir).
func isTemp(dir string) bool {
	return strings.HasPrefix(dir, os.TempDir()+string(os.PathSeparator))
}

// repeat makes n timed calls of one tool; an answer without want counts as
// an error. It stops early after maxErrors failures or when ctx ends.
func repeat(ctx context.Context, s *server, cfg *config, r *modeResult, ser *series, n int, name string, args func(i int) map[string]any, want string) {
	for i := range n {
		if ctx.Err() != nil {
			return
		}
		rep := s.call(ctx, cfg.callTimeout, name, args(i))
		switch {
		case rep.err != nil || rep.isError:
			ser.fail(rep.failure())
		case !strings.Contains(rep.text, want):
			ser.fail("unexpected answer: " + rep.text)
		default:
			ser.add(rep.took)
			if strings.Contains(rep.text, "Waited ") {
				r.anomaly("%s #%d: a lone sequential call reports a lock wait: %q", name, i, rep.text)
			}
		}
		if ser.Errors >= maxErrors {
			r.anomaly("%s: stopped after %d failed calls of %d", ser.Name, ser.Errors, n)
			return
		}
	}
}

// checkPage checks that the clicks and fills did what they said.
func (r *modeResult) checkPage(ctx context.Context, s *server, cfg *config, page int, lastValue string) {
	rep := s.call(ctx, cfg.callTimeout, "evaluate_script", map[string]any{"pageId": page,
		"function": "() => [window.submits, document.getElementById('name').value]"})
	if rep.err != nil || rep.isError {
		r.anomaly("reading the page after the clicks and fills: %s", rep.failure())
		return
	}
	var got []any
	_ = json.Unmarshal([]byte(jsonBlock(rep.text)), &got)
	want := []any{float64(r.Click.Calls - r.Click.Errors), lastValue}
	if !reflect.DeepEqual(got, want) {
		r.anomaly("after the clicks and fills the page holds %s, want [submits=%v, value=%q]; answer:\n%s", jsonBlock(rep.text), want[0], lastValue, rep.text)
	}
}

// holdAndProbe runs the hold script on page a and, while it runs, quick
// calls on page b one after another.
func holdAndProbe(ctx context.Context, s *server, cfg *config, a, b int) *holdResult {
	holdJS := fmt.Sprintf("() => new Promise(r => setTimeout(r, %d))", cfg.hold.Milliseconds())
	return probeWhile(ctx, s, cfg, b, cfg.hold+cfg.callTimeout, func() reply {
		return s.call(ctx, cfg.hold+cfg.callTimeout, "evaluate_script", map[string]any{"pageId": a, "function": holdJS})
	})
}

// probeWhile starts the long call on page A, callA, which gives up within
// aTimeout, and makes quick calls on page b one after another until it ends.
func probeWhile(ctx context.Context, s *server, cfg *config, b int, aTimeout time.Duration, callA func() reply) *holdResult {
	h := &holdResult{B: &series{Name: "evaluate_script on page B"}}
	done := make(chan reply, 1)
	aSent := time.Now()
	go func() { done <- callA() }()
	select {
	case <-time.After(settle):
	case <-ctx.Done():
	}
	deadline := time.Now().Add(aTimeout)
	var aRep *reply
	for i := 0; i < maxBCalls && aRep == nil && ctx.Err() == nil && time.Now().Before(deadline); i++ {
		rep := s.call(ctx, cfg.callTimeout, "evaluate_script", map[string]any{"pageId": b, "function": "() => 2"})
		select {
		case x := <-done:
			aRep = &x
		default:
			h.Overlaps++
		}
		if i == 0 {
			h.FirstMS, h.FirstEndMS = ms(rep.took), ms(time.Since(aSent))
		}
		switch {
		case rep.err != nil || rep.isError:
			h.B.fail(rep.failure())
		case !strings.Contains(rep.text, "```json\n2\n```"):
			h.B.fail("unexpected answer: " + rep.text)
		default:
			h.B.add(rep.took)
		}
		if strings.Contains(rep.text, "Waited ") {
			h.Notices++
		}
		if h.B.Errors >= maxErrors {
			break
		}
	}
	if aRep == nil {
		x := <-done // bounded by the hold call's own timeout
		aRep = &x
	}
	h.AMS = ms(aRep.took)
	if aRep.err != nil || aRep.isError {
		h.AError = aRep.failure()
	}
	return h
}

// checkHold checks the lock mode's promise: page mode lets B through while
// A holds its page; global mode makes B wait and says so.
func (r *modeResult) checkHold(cfg *config) {
	h := r.BWhileA
	if h.AError != "" {
		r.anomaly("the %v script on page A failed: %s", cfg.hold, h.AError)
	}
	if h.B.Errors > 0 {
		r.anomaly("calls on page B failed (%d): %s", h.B.Errors, h.B.FirstError)
	}
	if d := h.AMS - ms(cfg.hold); d > 500 {
		r.anomaly("the %v script on page A took %s, %s more than its timer", cfg.hold, fmtMS(h.AMS), fmtMS(d))
	}
	waitMS := ms(cfg.hold - settle)
	switch r.Mode {
	case "global":
		if h.FirstMS < 0.8*waitMS {
			r.anomaly("global mode: the first call on page B took %s; it should have waited ~%v for page A", fmtMS(h.FirstMS), cfg.hold)
		}
		if h.Notices == 0 {
			r.anomaly(`global mode: no answer on page B carried a "Waited N ms for page …" line`)
		}
	case "page":
		if h.Overlaps == 0 {
			r.anomaly("page mode: no call on page B finished while page A's script ran")
		}
		if h.Notices > 0 {
			r.anomaly(`page mode: %d answer(s) on page B carried a "Waited" line`, h.Notices)
		}
	}
}

var pageID = regexp.MustCompile(`^(\d+): `)

// openPage opens url in a new page and returns its id and the call's time.
func openPage(ctx context.Context, s caller, cfg *config, url string) (int, time.Duration, error) {
	rep := s.call(ctx, cfg.callTimeout, "new_page", map[string]any{"url": url})
	if rep.err != nil || rep.isError {
		return 0, rep.took, fmt.Errorf("new_page %s: %s", url, rep.failure())
	}
	for _, line := range strings.Split(rep.text, "\n") {
		if strings.Contains(line, "("+url+")") || strings.HasSuffix(strings.TrimSuffix(line, " [selected]"), " "+url) {
			if m := pageID.FindStringSubmatch(line); m != nil {
				id, _ := strconv.Atoi(m[1])
				return id, rep.took, nil
			}
		}
	}
	return 0, rep.took, errors.New("new_page answer lists no page with its URL:\n" + rep.text)
}

// uidOf returns the uid of the first snapshot line that contains needle.
func uidOf(snap, needle string) string {
	for _, line := range strings.Split(snap, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, needle) {
			if uid, ok := strings.CutPrefix(f[0], "uid="); ok {
				return uid
			}
		}
	}
	return ""
}

// jsonBlock returns the ```json block of an evaluate_script answer.
func jsonBlock(text string) string {
	_, body, ok := strings.Cut(text, "```json\n")
	if !ok {
		return ""
	}
	body, _, _ = strings.Cut(body, "```")
	return strings.TrimSpace(body)
}
