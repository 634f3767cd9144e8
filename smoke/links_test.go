package smoke

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pagemux/pagemux/browser"
)

// TestSmokeCheckLinks: --check-links requests each same-origin link once
// per run (fragments dropped, however many pages link to it), HEAD first
// and GET where HEAD is refused; a 404 and a connection the server drops
// fail every page that links to them, naming the link; links elsewhere,
// and with a session the sign-out link, are not requested. One run, one
// Chrome.
func TestSmokeCheckLinks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := map[string][]string{} // path: methods of the link checks (not page loads)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits["other"] = append(hits["other"], r.Method)
		mu.Unlock()
	}))
	defer other.Close()
	page := func(w http.ResponseWriter, links ...string) {
		var b strings.Builder
		for _, l := range links {
			fmt.Fprintf(&b, `<li><a href="%s">%s</a></li>`, l, l)
		}
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Links</title><main><h1>Links</h1><ul>%s</ul></main></html>`, b.String())
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Sec-Fetch-Mode") != "navigate" && r.URL.Path != "/favicon.ico" {
			mu.Lock()
			hits[r.URL.Path] = append(hits[r.URL.Path], r.Method)
			mu.Unlock()
		}
		switch r.URL.Path {
		case "/a":
			page(w, "/b", "/b#part", "#top", "/missing", "/no-head", "/reset", "/logout", other.URL+"/", "mailto:x@example.com")
		case "/b":
			page(w, "/a", "/missing")
		case "/no-head":
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			fmt.Fprint(w, "ok")
		case "/reset":
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		case "/favicon.ico", "/logout":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()

	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := run(t, options(t, "--check-links", "--cookie", "session=abc", "--json", jsonPath, site.URL+"/a", site.URL+"/b"), browser.Config{})
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	r := readReport(t, jsonPath)
	want := [][]string{
		{"links: error: " + site.URL + "/missing: HTTP 404 Not Found", "links: error: " + site.URL + "/reset: the request failed: Failed to fetch"},
		{"links: error: " + site.URL + "/missing: HTTP 404 Not Found"},
	}
	for i, p := range r.Pages {
		if got := problems(p); !slices.Equal(got, want[i]) {
			t.Errorf("%s: problems\n  %s\nwant\n  %s", p.URL, strings.Join(got, "\n  "), strings.Join(want[i], "\n  "))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for path, methods := range map[string][]string{
		"/a": {"HEAD"}, "/b": {"HEAD"}, "/missing": {"HEAD", "GET"}, "/no-head": {"HEAD", "GET"},
		"/logout": nil, "other": nil,
	} {
		if got := hits[path]; !slices.Equal(got, methods) {
			t.Errorf("%s was requested %q by the link check, want %q", path, got, methods)
		}
	}
	if !strings.Contains(stdout, "error    links: "+site.URL+"/missing: HTTP 404 Not Found") {
		t.Errorf("summary lacks the broken link:\n%s", stdout)
	}
}

// TestSmokeCrawl: --crawl N checks up to N pages more, found by following
// the same-origin links of the pages checked, breadth first, each once; a
// broken one fails saying which page linked it; files and pages past N
// are not requested. --parallel 1 makes the order found the order checked.
func TestSmokeCrawl(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := map[string]int{}
	page := func(w http.ResponseWriter, links ...string) {
		var b strings.Builder
		for _, l := range links {
			fmt.Fprintf(&b, `<li><a href="%s">%s</a></li>`, l, l)
		}
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Crawl</title><main><h1>Crawl</h1><ul>%s</ul></main></html>`, b.String())
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/":
			page(w, "/a", "/a#again", "/b", "/report.pdf", "https://elsewhere.test/")
		case "/a":
			page(w, "/", "/gone", "/c")
		case "/b":
			page(w, "/d")
		case "/c", "/d":
			page(w)
		case "/favicon.ico":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := run(t, options(t, "--crawl", "3", "--parallel", "1", "--json", jsonPath, site.URL+"/"), browser.Config{})
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	r := readReport(t, jsonPath)
	var got []string
	for _, p := range r.Pages {
		got = append(got, strings.TrimPrefix(p.URL, site.URL)+" from "+strings.TrimPrefix(p.FoundOn, site.URL)+" "+verdict(p))
	}
	want := []string{"/ from  PASS", "/a from / PASS", "/b from / PASS", "/gone from /a FAIL"}
	if !slices.Equal(got, want) {
		t.Errorf("pages %q, want %q", got, want)
	}
	if p := r.Pages[len(r.Pages)-1]; !slices.Equal(problems(p), []string{"load: error: HTTP 404 Not Found"}) {
		t.Errorf("/gone: problems %q", problems(p))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"/c", "/d", "/report.pdf"} {
		if hits[path] > 0 {
			t.Errorf("%s was requested %d times: past --crawl 3, or not a page", path, hits[path])
		}
	}
	if !strings.Contains(stdout, "4 pages on "+site.URL) || !strings.Contains(stdout, "FAIL    /gone") {
		t.Errorf("summary:\n%s", stdout)
	}
}
