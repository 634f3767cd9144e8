package browser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// headerLog serves pages and records the X-Preview-Token each request came
// with, by path.
type headerLog struct {
	mu   sync.Mutex
	seen map[string]string
}

func (l *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.seen[r.URL.Path] = r.Header.Get("X-Preview-Token")
	l.mu.Unlock()
	if r.URL.Path == "/favicon.ico" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	fmt.Fprint(w, "ok")
}

func (l *headerLog) token(path string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.seen[path]
	return v, ok
}

// TestOriginHeaders: the headers of an origin go with its document and
// with the requests its page makes to it, and never to another origin the
// page reaches.
func TestOriginHeaders(t *testing.T) {
	t.Parallel()
	other := &headerLog{seen: map[string]string{}}
	third := httptest.NewServer(other)
	t.Cleanup(third.Close)
	own := &headerLog{seen: map[string]string{}}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			own.ServeHTTP(httptest.NewRecorder(), r)
			fmt.Fprint(w, `<!doctype html><title>preview</title>`)
			return
		}
		own.ServeHTTP(w, r)
	}))
	t.Cleanup(site.Close)

	b := New(Config{})
	t.Cleanup(func() { b.Close() })
	if err := b.SetOriginHeaders([]OriginHeaders{{Origin: site.URL, Headers: http.Header{"X-Preview-Token": {"s3cret"}}}}); err != nil {
		t.Fatal(err)
	}
	needChrome(t)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(t.Context(), site.URL+"/page", 0); err != nil {
		t.Fatal(err)
	}
	fetches := fmt.Sprintf(`async () => { await fetch('/own'); await fetch(%q, {mode: 'no-cors'}); return 1 }`, third.URL+"/third")
	if _, err := p.Evaluate(t.Context(), fetches, nil); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/page", "/own"} {
		if v, ok := own.token(path); !ok || v != "s3cret" {
			t.Errorf("the origin's %s came with X-Preview-Token %q (seen %v), want the one set", path, v, ok)
		}
	}
	if v, ok := other.token("/third"); !ok || v != "" {
		t.Errorf("another origin got X-Preview-Token %q (seen %v), want none", v, ok)
	}
	if err := b.SetOriginHeaders([]OriginHeaders{{Origin: "http://x/path"}}); err == nil || !strings.Contains(err.Error(), "scheme://host") {
		t.Errorf("an origin with a path: %v", err)
	}
}
