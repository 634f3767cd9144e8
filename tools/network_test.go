package tools

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/pagelock"
)

// netHandler serves the endpoints of testdata/network.html under /net/, and
// /net/hold, whose answer waits for the test, to force interleavings.
func netHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/net/status", func(w http.ResponseWriter, r *http.Request) {
		code := 200
		fmt.Sscan(r.URL.Query().Get("code"), &code)
		w.WriteHeader(code)
		io.WriteString(w, "status page")
	})
	mux.HandleFunc("/net/abort", func(w http.ResponseWriter, r *http.Request) {
		// Close the connection without an answer: net::ERR_EMPTY_RESPONSE.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	mux.HandleFunc("/net/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Echo", "yes")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		fmt.Fprintf(w, "echo: %s", body)
	})
	mux.HandleFunc("/net/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/api/data?x=2", http.StatusFound)
	})
	mux.HandleFunc("/net/binary", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0xff, 0xfe, 0x00, 0x01, 0x80})
	})
	mux.HandleFunc("/net/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, strings.Repeat("0123456789", 5000))
	})
	mux.HandleFunc("/net/hold", func(w http.ResponseWriter, r *http.Request) {
		h := holds.get(r.URL.Query().Get("key"))
		close(h.arrived)
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"held":%q}`, r.URL.Query().Get("key"))
	})
	return mux
}

// hold is one held response: arrived closes when the request reached the
// server, release lets the answer go.
type hold struct{ arrived, release chan struct{} }

type holdSet struct {
	mu sync.Mutex
	m  map[string]*hold
}

var holds = &holdSet{m: map[string]*hold{}}

func (s *holdSet) get(key string) *hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[key]
	if !ok {
		h = &hold{arrived: make(chan struct{}), release: make(chan struct{})}
		s.m[key] = h
	}
	return h
}

// waitFor polls a read-only tool until its text satisfies ok: the page's
// own requests and timers finish on their own time. It is bounded.
func (e *testEnv) waitFor(t *testing.T, tool string, args map[string]any, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		text := e.ok(t, tool, args)
		if ok(text) {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s after 15s; last answer:\n%s", tool, what, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var reqLine = regexp.MustCompile(`(?m)^reqid=(\d+) (\S+) (\S+) \[([^\]]+)\]$`)

// requests maps each listed URL path (with query) to its "reqid METHOD [status]".
func requests(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range reqLine.FindAllStringSubmatch(text, -1) {
		path := strings.TrimPrefix(m[3], testSite.URL)
		if i := strings.Index(path, "open="); i > 0 { // the page's own marker
			path = path[:i-1]
		}
		out[path] = m[1] + " " + m[2] + " [" + m[4] + "]"
	}
	return out
}

func reqID(t *testing.T, list map[string]string, path string) int {
	t.Helper()
	v, ok := list[path]
	if !ok {
		t.Fatalf("no request for %s in %v", path, list)
	}
	var id int
	fmt.Sscan(v, &id)
	return id
}

func TestNetworkRequests(t *testing.T) {
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := sharedEnv(t, mode)
			id := e.openPage(t, "/network.html")
			args := map[string]any{"pageId": id}
			want := map[string]string{
				"/network.html":        "GET [200]",
				"/missing.png":         "GET [404]",
				"/api/data?x=1":        "GET [200]",
				"/net/status?code=404": "GET [404]",
				"/net/abort":           "GET [net::ERR_EMPTY_RESPONSE]",
				"/net/echo":            "POST [200]",
				"/net/redirect":        "GET [302]",
				"/api/data?x=2":        "GET [200]",
				"/net/binary":          "GET [200]",
				"/net/big":             "GET [200]",
			}
			// Every request listed and none pending: a redirect's 302 can be
			// in before Chrome sent the request it leads to.
			text := e.waitFor(t, "list_network_requests", args, "settled requests", func(s string) bool {
				list := requests(t, s)
				for path := range want {
					if _, ok := list[path]; !ok {
						return false
					}
				}
				return !strings.Contains(s, "[pending]")
			})
			mustContain(t, text, "## Network requests\nShowing 1-")
			list := requests(t, text)
			for path, w := range want {
				if got := list[path]; !strings.HasSuffix(got, " "+w) {
					t.Errorf("%s: listed as %q, want %q", path, got, w)
				}
			}
			if reqID(t, list, "/network.html") != 1 {
				t.Errorf("the document request is not reqid=1: %v", list)
			}

			// Filters.
			for _, tt := range []struct {
				types []string
				want  []string
			}{
				{[]string{"document"}, []string{"/network.html"}},
				{[]string{"image"}, []string{"/missing.png"}},
				{[]string{"fetch", "image"}, []string{"/missing.png", "/api/data?x=1", "/net/echo", "/net/redirect", "/api/data?x=2", "/net/abort"}},
			} {
				got := requests(t, e.ok(t, "list_network_requests", map[string]any{"pageId": id, "resourceTypes": tt.types}))
				for _, w := range tt.want {
					if _, ok := got[w]; !ok {
						t.Errorf("resourceTypes %v: %s missing from %v", tt.types, w, got)
					}
				}
				if tt.types[0] == "document" && len(got) != 1 {
					t.Errorf("resourceTypes %v: %v", tt.types, got)
				}
			}
			mustContain(t, e.fails(t, "list_network_requests", map[string]any{"pageId": id, "resourceTypes": []string{"xhrr"}}), `invalid argument "resourceTypes[0]" for list_network_requests: want one of "document"`)

			// Paging.
			paged := e.ok(t, "list_network_requests", map[string]any{"pageId": id, "pageSize": 3, "pageIdx": 1})
			mustContain(t, paged, "Showing 4-6 of", "Next page: 2", "Previous page: 0")
			if n := len(reqLine.FindAllString(paged, -1)); n != 3 {
				t.Errorf("page of 3 shows %d requests:\n%s", n, paged)
			}
			mustContain(t, e.ok(t, "list_network_requests", map[string]any{"pageId": id, "pageIdx": 40}), "Invalid page number provided. Showing first page.\nShowing 1-")
			mustContain(t, e.fails(t, "list_network_requests", map[string]any{"pageId": id, "pageSize": 0}), `invalid argument "pageSize" for list_network_requests: want more than 0, got 0`)

			// Details: headers, bodies, status, timing.
			echo := e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": reqID(t, list, "/net/echo")})
			mustContain(t, echo, "## Request "+testSite.URL+"/net/echo\nStatus: 200\nMethod: POST\nResource type: fetch\nTiming: response headers after ",
				"### Request Headers\n", "- content-type:text/plain",
				"### Request Body\nping=1\n### Response Headers\n", "- x-echo:yes", "- set-cookie:a=1\n- set-cookie:b=2",
				"### Response Body\necho: ping=1")
			if strings.Contains(echo, "Error") {
				t.Errorf("details have an error:\n%s", echo)
			}
			mustContain(t, e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": reqID(t, list, "/net/binary")}), "### Response Body\n<binary data, 5 bytes; pass responseFilePath to save it>")
			big := e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": reqID(t, list, "/net/big")})
			mustContain(t, big, "... <truncated: the body is 50000 bytes; pass responseFilePath to save all of it>")
			if len(big) > 12000 {
				t.Errorf("a big body came back whole: %d bytes", len(big))
			}
			mustContain(t, e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": reqID(t, list, "/net/abort")}), "Status: net::ERR_EMPTY_RESPONSE", "### Request failed with\nnet::ERR_EMPTY_RESPONSE")
			final := e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": reqID(t, list, "/api/data?x=2")})
			mustContain(t, final, "### Response Body\n{\"ok\":true}", "### Redirect chain\nreqid=", "/net/redirect [302]")
			mustContain(t, e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": reqID(t, list, "/net/redirect")}),
				"Status: 302", "a redirect response has no body", fmt.Sprintf("Redirected to reqid=%d.", reqID(t, list, "/api/data?x=2")))
			mustContain(t, e.fails(t, "get_network_request", map[string]any{"pageId": id, "reqid": 999}), "Error: no request with reqid 999", "list_network_requests")

			// Without a reqid: the latest request, and it says so.
			mustContain(t, e.ok(t, "get_network_request", args), "No reqid given: this is the latest request of the page (reqid=")

			// Saving bodies, inside the workspace and outside it.
			dir := t.TempDir()
			reqPath, respPath := filepath.Join(dir, "echo.network-request"), filepath.Join(dir, "sub", "echo.network-response")
			saved := e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": reqID(t, list, "/net/echo"), "requestFilePath": reqPath, "responseFilePath": respPath})
			mustContain(t, saved, "### Request Body\nSaved to "+reqPath+" (6 bytes).", "### Response Body\nSaved to "+respPath+" (12 bytes).")
			for path, want := range map[string]string{reqPath: "ping=1", respPath: "echo: ping=1"} {
				if b, err := os.ReadFile(path); err != nil || string(b) != want {
					t.Errorf("%s holds %q (%v), want %q", path, b, err, want)
				}
			}
			binPath := filepath.Join(dir, "bin")
			e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": reqID(t, list, "/net/binary"), "responseFilePath": binPath})
			if b, _ := os.ReadFile(binPath); string(b) != "\xff\xfe\x00\x01\x80" {
				t.Errorf("binary body saved as %q", b)
			}
			mustContain(t, e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": reqID(t, list, "/api/data?x=1"), "requestFilePath": filepath.Join(dir, "none")}),
				"<request body not available: the request has no body; nothing was saved to")
			outside := e.fails(t, "get_network_request", map[string]any{"pageId": id, "reqid": 1, "responseFilePath": "/proc/pagemux.network-response"})
			mustContain(t, outside, "outside the allowed roots")
		})
	}
}

// A response that finishes after the next navigation is filed with the
// document that asked for it: shown with includePreservedRequests, never in
// the new document's list. The server holds the answer until the test
// navigated, so the order is forced, not timed.
func TestNetworkSlowResponseAfterNavigation(t *testing.T) {
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := sharedEnv(t, mode)
			id := e.openPage(t, "/page2.html")
			key := fmt.Sprintf("%s-%d", mode, id)
			h := holds.get(key)
			e.eval(t, id, fmt.Sprintf(`() => { fetch("/net/hold?key=%s", {keepalive: true}); return 1 }`, key))
			select {
			case <-h.arrived:
			case <-time.After(15 * time.Second):
				t.Fatal("the held request never reached the server")
			}
			before := requests(t, e.ok(t, "list_network_requests", map[string]any{"pageId": id}))
			held := reqID(t, before, "/net/hold?key="+key)
			if !strings.HasSuffix(before["/net/hold?key="+key], "[pending]") {
				t.Fatalf("held request listed as %q before its answer", before["/net/hold?key="+key])
			}
			e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/form.html"})
			close(h.release)

			args := map[string]any{"pageId": id, "includePreservedRequests": true}
			e.waitFor(t, "list_network_requests", args, "answer to the held request", func(s string) bool {
				cur := e.ok(t, "list_network_requests", map[string]any{"pageId": id})
				if strings.Contains(cur, "/net/hold") {
					t.Fatalf("the held request shows in the new document:\n%s", cur)
				}
				return strings.Contains(s, fmt.Sprintf("reqid=%d GET %s/net/hold?key=%s [200]", held, testSite.URL, key))
			})
			cur := requests(t, e.ok(t, "list_network_requests", map[string]any{"pageId": id}))
			if reqID(t, cur, "/form.html") <= held {
				t.Fatalf("current document lists %v, want /form.html after reqid %d", cur, held)
			}
			mustContain(t, e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": held}), "Status: 200")
		})
	}
}

// Requests of the current navigation and the 3 before it are kept; older
// ones go; ids never change.
func TestNetworkPreservedNavigations(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/page2.html")
	for i := 1; i <= 4; i++ {
		e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": fmt.Sprintf("%s/page2.html?nav=%d", testSite.URL, i)})
	}
	all := requests(t, e.ok(t, "list_network_requests", map[string]any{"pageId": id, "includePreservedRequests": true}))
	if _, ok := all["/page2.html"]; ok {
		t.Errorf("the first navigation is still kept: %v", all)
	}
	for i := 1; i <= 4; i++ {
		if _, ok := all[fmt.Sprintf("/page2.html?nav=%d", i)]; !ok {
			t.Errorf("navigation %d is not kept: %v", i, all)
		}
	}
	cur := requests(t, e.ok(t, "list_network_requests", map[string]any{"pageId": id}))
	if cur["/page2.html?nav=4"] != all["/page2.html?nav=4"] {
		t.Errorf("the current document's request changed its id: %q vs %q", cur["/page2.html?nav=4"], all["/page2.html?nav=4"])
	}
	if _, ok := cur["/page2.html?nav=3"]; ok {
		t.Errorf("an earlier navigation shows without includePreservedRequests: %v", cur)
	}
	first := reqID(t, all, "/page2.html?nav=1")
	mustContain(t, e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": first}), "Status: 200")
	mustContain(t, e.fails(t, "get_network_request", map[string]any{"pageId": id, "reqid": 1}), "is no longer kept")
}

// A popup the page opened is attached on its first tool call: its earlier
// requests are missing and the list says so; Chrome replays its console.
// Its next document is recorded whole.
func TestCollectorsLateAttach(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	opener := e.openPage(t, "/form.html")
	e.eval(t, opener, `() => { window.open("/console.html?popup=1"); return 1 }`)
	popupLine := regexp.MustCompile(`(?m)^(\d+): Console \(.*popup=1\)`)
	text := e.waitFor(t, "list_pages", nil, "loaded popup", popupLine.MatchString)
	var id int
	fmt.Sscan(popupLine.FindStringSubmatch(text)[1], &id)
	t.Cleanup(func() {
		e.client.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "close_page", Arguments: map[string]any{"pageId": id}}})
	})

	reqs := e.ok(t, "list_network_requests", map[string]any{"pageId": id})
	mustContain(t, reqs, "Note: pagemux attached to this page after its document had started, so requests from before its first tool call on the page are missing.")
	if strings.Contains(reqs, "console.html") {
		t.Errorf("the popup's document request is listed though it came before the attach:\n%s", reqs)
	}
	msgs := e.ok(t, "list_console_messages", map[string]any{"pageId": id})
	mustContain(t, msgs, "] warned (1 args)")
	if strings.Contains(msgs, "Note:") {
		t.Errorf("the replayed console has a note:\n%s", msgs)
	}

	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/page2.html"})
	reqs = e.ok(t, "list_network_requests", map[string]any{"pageId": id})
	mustContain(t, reqs, "/page2.html [200]")
	if strings.Contains(reqs, "Note:") {
		t.Errorf("the popup's next document has a note:\n%s", reqs)
	}
	mustContain(t, e.ok(t, "list_network_requests", map[string]any{"pageId": id, "includePreservedRequests": true}), "Note: pagemux attached to this page after")
}
