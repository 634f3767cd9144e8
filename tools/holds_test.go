package tools

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// holdLimitEnv is a server over Streamable HTTP whose holds across calls
// last limit.
func holdLimitEnv(t *testing.T, limit time.Duration) *agentEnv {
	t.Helper()
	e := newAgentEnvWith(t, Options{Agents: agents.New(agents.Owned), MaxHold: limit})
	t.Cleanup(func() { e.srv.Close() }) // the agents' directories
	return e
}

// savedAt reads the path of a note "… it is saved at PATH (…" or "… the
// video is saved at PATH (…" in an answer.
func savedAt(t *testing.T, text string) string {
	t.Helper()
	m := regexp.MustCompile(`is saved at (\S+) \(`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no \"is saved at PATH\" in:\n%s", text)
	}
	return m[1]
}

// mustNotContain fails the test if got has unwanted.
func mustNotContain(t *testing.T, got, unwanted string) {
	t.Helper()
	if strings.Contains(got, unwanted) {
		t.Fatalf("want no %q in:\n%s", unwanted, got)
	}
}

// An abandoned trace (autoStop false, never stopped) holds Chrome's tracing
// until its limit: then pagemux stops it, saves it in its agent's
// workspace, another agent's trace starts, and the first agent's next
// answer, of any tool, says once where the trace is.
func TestHoldTraceLimit(t *testing.T) {
	t.Parallel()
	const limit = 3 * time.Second
	e := holdLimitEnv(t, limit)
	lead, sub := e.session(t, "lead-secret-1", "holder"), e.session(t, "sub-secret-1", "next")
	a := newPageAs(t, lead, "/page2.html")
	b := newPageAs(t, sub, "/page2.html")
	manual := func(page int, more map[string]any) map[string]any {
		args := map[string]any{"pageId": page, "reload": false, "autoStop": false}
		for k, v := range more {
			args[k] = v
		}
		return args
	}
	begin := time.Now()
	if text, failed := use(t, lead, "performance_start_trace", manual(a, nil)); failed {
		t.Fatal(text)
	}
	// The trace holds tracing: sub's start fails at once, unless the limit
	// has passed meanwhile on a slow machine.
	text, failed := use(t, sub, "performance_start_trace", manual(b, nil))
	if !failed {
		if time.Since(begin) < limit {
			t.Fatalf("sub's trace started while lead's held tracing: %s", text)
		}
	} else {
		mustContain(t, text, "held by another agent (a performance trace)")
		// Waiting in line, it starts when the limit ends lead's trace.
		text, failed = use(t, sub, "performance_start_trace", manual(b, map[string]any{"wait": true}))
		if failed {
			t.Fatalf("sub's trace did not start once lead's reached its limit: %s", text)
		}
		if took := time.Since(begin); took < limit {
			t.Fatalf("sub's trace started %v after lead's, before its %v limit", took, limit)
		}
	}
	mustContain(t, text, "being recorded")
	mustNotContain(t, text, "Your performance trace")

	// Lead's next answer, whatever the tool, says where its trace is, once.
	text, _ = use(t, lead, "list_pages", nil)
	mustContain(t, text, fmt.Sprintf("Your performance trace on page %d reached its %v limit and was stopped; it is saved at ", a, limit),
		"(performance_stop_trace also hands it out).")
	path := savedAt(t, text)
	leadDir := filepath.Join(e.filesBase(t), agentKey(agents.Identity("lead", "holder", "")))
	if filepath.Dir(path) != leadDir || !strings.HasSuffix(path, ".json.gz") {
		t.Fatalf("the trace was saved at %s, want a .json.gz in lead's directory %s", path, leadDir)
	}
	checkGzipTrace(t, path)
	text, _ = use(t, lead, "list_pages", nil)
	mustNotContain(t, text, "Your performance trace")

	// performance_stop_trace hands it out too, once sub's is stopped.
	if text, failed := use(t, sub, "performance_stop_trace", map[string]any{"pageId": b}); failed {
		t.Fatal(text)
	}
	text, failed = use(t, lead, "performance_stop_trace", map[string]any{"pageId": a})
	if failed {
		t.Fatal(text)
	}
	mustContain(t, text, fmt.Sprintf("stopped by itself: it reached the %v limit of a trace", limit),
		"The raw trace data was saved to "+path+".", "NO_NAVIGATION")
	text, _ = use(t, sub, "list_pages", nil)
	mustNotContain(t, text, "Your performance trace")
}

// checkGzipTrace fails the test unless path is a gzipped trace with events.
func checkGzipTrace(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() == 0 {
		t.Fatalf("%s is empty: %v", path, err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not gzip: %v", path, err)
	}
	var v struct {
		TraceEvents []json.RawMessage `json:"traceEvents"`
	}
	if err := json.NewDecoder(zr).Decode(&v); err != nil || len(v.TraceEvents) == 0 {
		t.Fatalf("%s: %v, %d events", path, err, len(v.TraceEvents))
	}
}

// A screencast nobody stops ends at its limit with a finished video in its
// agent's workspace; the agent's next answer says where, once, and
// screencast_stop hands it out as though it had stopped it. The page can
// record again.
func TestHoldScreencastLimit(t *testing.T) {
	t.Parallel()
	const limit = 2 * time.Second
	e := holdLimitEnv(t, limit)
	lead := e.session(t, "lead-secret-1", "caster")
	id := newPageAs(t, lead, "/form.html")
	if text, failed := use(t, lead, "resize_page", map[string]any{"pageId": id, "width": 320, "height": 240}); failed {
		t.Fatal(text) // small frames: see openSmallPage
	}
	text, failed := use(t, lead, "screencast_start", map[string]any{"pageId": id})
	if failed {
		t.Fatal(text)
	}
	_, rest, _ := strings.Cut(text, "will be saved to ")
	path, _, _ := strings.Cut(rest, ". Use screencast_stop")
	leadDir := filepath.Join(e.filesBase(t), agentKey(agents.Identity("lead", "caster", "")))
	if !strings.HasPrefix(path, leadDir+string(filepath.Separator)) {
		t.Fatalf("the screencast goes to %s, want lead's directory %s", path, leadDir)
	}
	p, err := e.b.Page(id)
	if err != nil {
		t.Fatal(err)
	}
	sc := p.Screencast()
	if sc == nil {
		t.Fatal("page has no screencast after screencast_start")
	}
	select {
	case <-sc.Done():
	case <-time.After(time.Minute + limit):
		t.Fatalf("the screencast did not end within a minute of its %v limit", limit)
	}
	// The note follows the finished video.
	mcptest.WaitFor(t, "the note of the screencast's end", func() bool { return e.srv.holdNotes.count() > 0 })

	text = useOK(t, lead, "list_pages", nil)
	mustContain(t, text, fmt.Sprintf("Your screencast on page %d reached its %v limit and was stopped; the video is saved at %s (screencast_stop also hands it out).", id, limit, path))
	if _, frames, _ := probeVideo(t, path); frames < 1 {
		t.Fatalf("the video at %s has no frame", path)
	}
	mustNotContain(t, useOK(t, lead, "list_pages", nil), "Your screencast")

	mustContain(t, useOK(t, lead, "screencast_stop", map[string]any{"pageId": id}),
		fmt.Sprintf("The screencast recording had stopped by itself: it reached its %v limit. It was saved to %s.", limit, path))
	if text, failed := use(t, lead, "screencast_stop", map[string]any{"pageId": id}); !failed {
		t.Fatalf("a second screencast_stop succeeded: %s", text)
	}
	useOK(t, lead, "screencast_start", map[string]any{"pageId": id, "filePath": "again.mp4"})
	mustContain(t, useOK(t, lead, "screencast_stop", map[string]any{"pageId": id}), "has been stopped and saved to "+filepath.Join(leadDir, "again.mp4"))
}

// A screencast stopped before its limit tells no one, and its limit does
// not end the next one early.
func TestHoldScreencastStoppedInTime(t *testing.T) {
	t.Parallel()
	e := holdLimitEnv(t, time.Minute)
	lead := e.session(t, "lead-secret-1", "quick")
	id := newPageAs(t, lead, "/form.html")
	useOK(t, lead, "resize_page", map[string]any{"pageId": id, "width": 320, "height": 240})
	useOK(t, lead, "screencast_start", map[string]any{"pageId": id, "filePath": "quick.mp4"})
	mustContain(t, useOK(t, lead, "screencast_stop", map[string]any{"pageId": id}), "has been stopped and saved to")
	if n := e.srv.holdNotes.count(); n != 0 {
		t.Fatalf("%d notes after a screencast stopped in time", n)
	}
	if text, failed := use(t, lead, "screencast_stop", map[string]any{"pageId": id}); !failed {
		t.Fatalf("a second screencast_stop succeeded: %s", text)
	}
}

// The seam for per-agent limits (Server.holdLimits) overrides --max-hold
// for the kinds it answers, and only those.
func TestHoldLimitOverride(t *testing.T) {
	t.Parallel()
	s := &Server{maxHold: DefaultMaxHold}
	ctx := agents.With(context.Background(), agents.Agent{ID: "token:lead"})
	if got := s.holdLimit(ctx, holdTrace); got != DefaultMaxHold {
		t.Fatalf("without rules: %v, want %v", got, DefaultMaxHold)
	}
	s.holdLimits = func(ctx context.Context, kind string) time.Duration {
		if a, _ := agents.From(ctx); a.ID == "token:lead" && kind == holdScreencast {
			return time.Minute
		}
		return 0
	}
	if got := s.holdLimit(ctx, holdScreencast); got != time.Minute {
		t.Fatalf("the rules' limit for lead's screencast: %v, want 1m0s", got)
	}
	if got := s.holdLimit(ctx, holdTrace); got != DefaultMaxHold {
		t.Fatalf("a kind the rules leave alone: %v, want %v", got, DefaultMaxHold)
	}
}

// useOK calls a tool as an agent that must succeed and returns its text.
func useOK(t *testing.T, c *client.Client, tool string, args map[string]any) string {
	t.Helper()
	text, failed := use(t, c, tool, args)
	if failed {
		t.Fatalf("%s %v failed: %s", tool, args, text)
	}
	return text
}

// count is how many notes agents are yet to read.
func (n *holdNotes) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, notes := range n.pending {
		k += len(notes)
	}
	return k
}
