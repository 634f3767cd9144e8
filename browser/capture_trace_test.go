package browser

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/chromedp"
)

func traceSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<!doctype html><title>T</title><h1 id="big" class="hero">Tracing test headline</h1><p>text</p>`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func tracePage(t *testing.T, b *Browser, url string) *Page {
	t.Helper()
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, p)
	if err := p.Navigate(t.Context(), url, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return p
}

// firstPaint resolves once the page has painted its first content.
const firstPaint = `() => new Promise(resolve => new PerformanceObserver((list, o) => {
	if (list.getEntriesByName("first-contentful-paint").length) { o.disconnect(); resolve(true) }
}).observe({type: "paint", buffered: true}))`

// traceEvents decodes a trace and returns the names of its events.
func traceEvents(t *testing.T, data []byte) map[string]int {
	t.Helper()
	var tr struct {
		TraceEvents []struct {
			Name string `json:"name"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("the trace is not JSON: %v", err)
	}
	names := map[string]int{}
	for _, e := range tr.TraceEvents {
		names[e.Name]++
	}
	return names
}

// A trace records a reload, and Chrome refuses a second trace meanwhile.
func TestTrace(t *testing.T) {
	srv := traceSite(t)
	b := sharedBrowser(t) // not parallel: a trace is the browser's, and no other test runs meanwhile
	p := tracePage(t, b, srv.URL)
	tr, err := p.Capture().StartTrace(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Capture().StartTrace(t.Context()); !errors.Is(err, ErrTracingBusy) {
		t.Fatalf("second StartTrace: %v, want ErrTracingBusy", err)
	}
	p.Mark(t.Context(), "pagemux-test-mark")
	if err := p.Reload(t.Context(), false, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The load event can come before the first paint on a busy machine
	// (the trace then had no firstContentfulPaint): wait for the paint.
	if _, err := p.Evaluate(t.Context(), firstPaint, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := tr.Stop(t.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	names := traceEvents(t, buf.Bytes())
	for _, want := range []string{"TracingStartedInBrowser", "navigationStart", "firstContentfulPaint", "pagemux-test-mark"} {
		if names[want] == 0 {
			t.Errorf("no %s event in the trace", want)
		}
	}
	// Tracing is free again.
	tr2, err := p.Capture().StartTrace(t.Context())
	if err != nil {
		t.Fatalf("start after stop: %v", err)
	}
	if _, err := tr2.Stop(t.Context(), io.Discard); err != nil {
		t.Fatal(err)
	}
}

// The trace is the browser's: it survives its page and still saves.
func TestTraceOutlivesPage(t *testing.T) {
	srv := traceSite(t)
	b := sharedBrowser(t) // not parallel: a trace is the browser's, and no other test runs meanwhile
	keep := tracePage(t, b, srv.URL)
	p := tracePage(t, b, srv.URL+"/closing")
	tr, err := p.Capture().StartTrace(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(t.Context(), false, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.ClosePage(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := tr.Stop(t.Context(), &buf); err != nil {
		t.Fatalf("stop after the page closed: %v", err)
	}
	if names := traceEvents(t, buf.Bytes()); names["navigationStart"] == 0 {
		t.Fatalf("the trace lost the closed page's reload: %v", len(names))
	}
	_ = keep
}

// DescribeNodes names live nodes by backend id and leaves out the others.
func TestDescribeNodes(t *testing.T) {
	srv := traceSite(t)
	b := sharedBrowser(t)
	p := tracePage(t, b, srv.URL)
	pctx, cancel := p.Context(t.Context())
	defer cancel()
	doc, err := chromedp.Call(pctx, dom.GetDocument, dom.GetDocumentParams{Depth: new(int64(-1))})
	if err != nil {
		t.Fatal(err)
	}
	var h1 cdp.BackendNodeID
	var walk func(n *cdp.Node)
	walk = func(n *cdp.Node) {
		if n.LocalName == "h1" {
			h1 = n.BackendNodeID
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(doc.Root)
	if h1 == 0 {
		t.Fatal("no h1 in the document")
	}
	got := p.DescribeNodes(t.Context(), []int64{int64(h1), 999999})
	if want := `h1#big.hero "Tracing test headline"`; got[int64(h1)] != want || len(got) != 1 {
		t.Fatalf("DescribeNodes = %v, want {%d: %q}", got, h1, want)
	}
}

// A heap snapshot streams out as one JSON document.
func TestHeapSnapshot(t *testing.T) {
	srv := traceSite(t)
	b := sharedBrowser(t)
	p := tracePage(t, b, srv.URL)
	var buf bytes.Buffer
	n, err := p.Capture().HeapSnapshot(t.Context(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || n < 1000 {
		t.Fatalf("wrote %d bytes, reported %d", buf.Len(), n)
	}
	var snap struct {
		Snapshot json.RawMessage `json:"snapshot"`
		Nodes    []int64         `json:"nodes"`
	}
	if err := json.Unmarshal(buf.Bytes(), &snap); err != nil || len(snap.Snapshot) == 0 || len(snap.Nodes) == 0 {
		t.Fatalf("snapshot: %v, %d nodes", err, len(snap.Nodes))
	}

	// A writer that fails stops the copy with its error.
	if _, err := p.Capture().HeapSnapshot(t.Context(), failingWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("HeapSnapshot to a failing writer: %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }
