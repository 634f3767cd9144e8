package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/tools"
)

// fakeSource is a Source with one held lock and no pages.
type fakeSource struct{}

func (fakeSource) LocksFor(context.Context) []tools.LockState {
	return []tools.LockState{{Lock: "page 1", Holder: "click on page 1 for agent token:a", Waiting: []string{"fill on page 1 for agent token:b"}}}
}
func (fakeSource) PagesView() []tools.PageView { return nil }

// TestPushesCoalesce: a burst of calls reaches a viewer as a few pushes,
// at most one per Options.Push (and a first), the last one whole.
func TestPushesCoalesce(t *testing.T) {
	v := New(Options{Push: 50 * time.Millisecond})
	v.Attach(fakeSource{})
	srv := httptest.NewServer(v)
	defer srv.Close()
	defer v.Close()
	resp, err := http.Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan state, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var st state
				if json.Unmarshal([]byte(data), &st) == nil {
					events <- st
				}
			}
		}
		close(events)
	}()
	first := <-events // the newcomer's first push
	if len(first.Locks) != 1 || first.Locks[0].Waiting[0] != "fill on page 1 for agent token:b" {
		t.Fatalf("first push: %+v", first)
	}
	const n = 300
	start := time.Now()
	for i := range uint64(n) {
		c := tools.CallInfo{ID: 1000 + i, Agent: "token:a", Tool: "click", Page: 1, Arrived: time.Now()}
		v.Queued(c)
		c.Started = time.Now()
		v.Started(t.Context(), c)
		v.Ended(t.Context(), tools.CallEnd{CallInfo: c, Outcome: "ok", Took: time.Millisecond}, nil)
	}
	pushes := 0
	for st := range events {
		pushes++
		if len(st.Calls) == n {
			break
		}
	}
	if max := int(time.Since(start)/(50*time.Millisecond)) + 2; pushes > max {
		t.Errorf("%d calls came as %d pushes in %v: want at most %d", n, pushes, time.Since(start), max)
	}
	if got := v.Frames(); got != 0 {
		t.Errorf("%d thumbnail frames without a page", got)
	}
}

// TestHandlerPaths: the page, its files, the state, the records' slot and
// what is refused.
func TestHandlerPaths(t *testing.T) {
	v := New(Options{})
	v.Attach(fakeSource{})
	defer v.Close()
	for _, tt := range []struct {
		method, path string
		status       int
		has          string
	}{
		{"GET", "/ui", 200, "<title>pagemux live view</title>"},
		{"GET", "/ui/", 200, `src="/ui/app.js"`},
		{"GET", "/ui/app.js", 200, "EventSource"},
		{"GET", "/ui/style.css", 200, ".bar"},
		{"GET", "/ui/state", 200, `"locks":[{"lock":"page 1"`},
		{"GET", "/ui/thumb/1", 404, "/ui/events is open"},
		{"GET", "/ui/thumb/x", 404, ""},
		{"GET", "/ui/records/", 404, "--record DIR"},
		{"GET", "/ui/nothing", 404, ""},
		{"POST", "/ui/state", 405, "GET"},
	} {
		w := httptest.NewRecorder()
		v.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
		if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.has) {
			t.Errorf("%s %s: %d %.200s", tt.method, tt.path, w.Code, w.Body)
		}
	}
	rec := New(Options{Records: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("records of " + r.URL.Path)) })})
	w := httptest.NewRecorder()
	rec.ServeHTTP(w, httptest.NewRequest("GET", "/ui/records/x", nil))
	if w.Body.String() != "records of /ui/records/x" {
		t.Errorf("/ui/records/ with Records: %q", w.Body)
	}
}
