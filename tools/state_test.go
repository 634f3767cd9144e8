package tools

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/storagestate"
)

// The browser state tools (state.go) against a site of the tests' own on
// loopback: a login form whose POST sets an httpOnly session cookie and
// whose signed-in page keeps a token in localStorage, a page with a frame
// of another origin (localhost beside 127.0.0.1), and a page that fills an
// IndexedDB database.

// stateSite serves the login app. Its session cookie's value is fixed, so
// that a test can tell a restored session from none.
func stateSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.FormValue("user") == "alice" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3ss10n-alice", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
			http.Redirect(w, r, "/app?fresh=1", http.StatusSeeOther)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Log in</title><h1>Please log in</h1>
<form method="post" action="/login"><label>User <input name="user"></label><button>Log in</button></form>`)
	})
	mux.HandleFunc("/app", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err != nil || c.Value != "s3ss10n-alice" {
			http.Redirect(w, r, "/login", http.StatusFound)
			return
		}
		// The page keeps a token at login, and shows whether it has one.
		fmt.Fprint(w, `<!doctype html><title>App</title><h1>Signed in as alice</h1><p id="token"></p><script>
if (location.search.includes("fresh")) localStorage.setItem("token", "t0k3n-alice");
document.getElementById("token").textContent = localStorage.getItem("token") === "t0k3n-alice" ? "token ok" : "no token";
</script>`)
	})
	mux.HandleFunc("/framed", func(w http.ResponseWriter, r *http.Request) {
		other := strings.Replace("http://"+r.Host, "127.0.0.1", "localhost", 1)
		fmt.Fprintf(w, `<!doctype html><title>Framed</title><h1>Top</h1><iframe src="%s/frame"></iframe>`, other)
	})
	mux.HandleFunc("/frame", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Frame</title><p>in a frame</p><script>localStorage.setItem("frame-wrote", location.origin)</script>`)
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Plain</title><p>plain page</p>`)
	})
	mux.HandleFunc("/idb", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>IDB</title><p id="state">filling</p><script>
const open = indexedDB.open("shop", 3);
open.onupgradeneeded = () => {
  const items = open.result.createObjectStore("items", {keyPath: "id"});
  items.createIndex("byName", "name");
  open.result.createObjectStore("log", {autoIncrement: true});
};
open.onsuccess = () => {
  const tx = open.result.transaction(["items", "log"], "readwrite");
  for (const [id, name] of [[1, "pen"], [2, "ink"], [3, "pad"]]) tx.objectStore("items").put({id, name});
  tx.objectStore("log").add("filled");
  tx.oncomplete = () => { document.getElementById("state").textContent = "database ready"; };
};
</script>`)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// openIn opens url in a new page of the browser context named name (of
// the test's own, so that clearing its cookies touches no other test's)
// and returns the page's id.
func openIn(t *testing.T, e *testEnv, url, name string) int {
	t.Helper()
	url += fmt.Sprintf("?open=%d", openCount.Add(1))
	text := e.ok(t, "new_page", map[string]any{"url": url, "background": true, "isolatedContext": name})
	m := regexp.MustCompile(`(?m)^(\d+): .*` + regexp.QuoteMeta(url)).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("new_page %s: no page with that URL in:\n%s", url, text)
	}
	var id int
	fmt.Sscan(m[1], &id)
	t.Cleanup(func() {
		e.client.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "close_page", Arguments: map[string]any{"pageId": id}}})
	})
	return id
}

// TestCookieTools: each cookie tool on a page of a context of the test's
// own; what they set the page sends and reads, what they delete it no
// longer has; bad input is refused with what to give.
func TestCookieTools(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	site := stateSite(t)
	p := openIn(t, e, site.URL+"/plain", "cookie-tools")
	page := map[string]any{"pageId": p}
	with := func(more map[string]any) map[string]any {
		m := map[string]any{"pageId": p}
		for k, v := range more {
			m[k] = v
		}
		return m
	}

	mustContain(t, e.ok(t, "cookie_list", page), "No cookies.")
	mustContain(t, e.ok(t, "cookie_set", with(map[string]any{"name": "theme", "value": "dark"})), "Set cookie theme")
	// Chrome keeps a cookie 400 days at most.
	expires := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	e.ok(t, "cookie_set", with(map[string]any{"name": "deep", "value": "d33p", "domain": "127.0.0.1", "path": "/private",
		"expires": expires.Unix(), "httpOnly": true, "sameSite": "Strict"}))
	if got := e.eval(t, p, "() => document.cookie"); got != `"theme=dark"` {
		t.Errorf("the page reads document.cookie %s, want theme=dark alone (deep is httpOnly and of /private)", got)
	}
	list := e.ok(t, "cookie_list", page)
	mustContain(t, list, "theme=dark; Domain=127.0.0.1; Path=/; Session", "deep=d33p; Domain=127.0.0.1; Path=/private; Expires="+expires.UTC().Format(time.RFC3339)+"; HttpOnly; SameSite=Strict")
	if got := e.ok(t, "cookie_list", with(map[string]any{"url": site.URL + "/"})); strings.Contains(got, "deep") || !strings.Contains(got, "theme") {
		t.Errorf("cookie_list url=/ shows a cookie of /private, or not theme:\n%s", got)
	}
	mustContain(t, e.ok(t, "cookie_list", with(map[string]any{"path": "/private/page"})), "deep=d33p")
	if got := e.ok(t, "cookie_list", with(map[string]any{"domain": "example.com"})); !strings.Contains(got, "No cookies sent to example.com") {
		t.Errorf("cookie_list domain=example.com:\n%s", got)
	}
	mustContain(t, e.ok(t, "cookie_get", with(map[string]any{"name": "deep"})), "deep=d33p", "HttpOnly")
	mustContain(t, e.fails(t, "cookie_get", with(map[string]any{"name": "nope"})), `no cookie named "nope"`, "cookie_list")

	mustContain(t, e.ok(t, "cookie_delete", with(map[string]any{"name": "theme"})), "Deleted 1 cookie named theme")
	mustContain(t, e.ok(t, "cookie_delete", with(map[string]any{"name": "theme"})), "Deleted 0 cookies")
	if got := e.eval(t, p, "() => document.cookie"); got != `""` {
		t.Errorf("after cookie_delete the page reads %s", got)
	}
	// A partitioned cookie (CHIPS) of a top-level site.
	e.ok(t, "cookie_set", with(map[string]any{"name": "chip", "value": "c", "domain": "127.0.0.1", "secure": true, "partitionKey": "https://top.test/"}))
	mustContain(t, e.ok(t, "cookie_get", with(map[string]any{"name": "chip"})), "chip=c; Domain=127.0.0.1; Path=/; Session; Secure", "Partitioned=https://top.test")
	mustContain(t, e.ok(t, "cookie_clear", page), "Deleted 2 cookies")
	mustContain(t, e.ok(t, "cookie_list", page), "No cookies.")

	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"value": "v"}, "name"},
		{map[string]any{"name": "", "value": "v"}, "name"},
		{map[string]any{"name": "a", "value": "v", "sameSite": "lax"}, "sameSite"},
		{map[string]any{"name": "a", "value": "v", "sameSite": "None"}, "needs secure: true"},
		{map[string]any{"name": "a", "value": "v", "expires": -5}, "has expires -5: want seconds since 1970"},
		{map[string]any{"name": "a", "value": "v", "expires": 1.8e12}, "in milliseconds"},
		{map[string]any{"name": "a", "value": "v", "expires": "tomorrow"}, "expires"},
		{map[string]any{"name": "a", "value": "v", "domain": "a.test", "url": "http://a.test/"}, "give domain or url, not both"},
		{map[string]any{"name": "a", "value": "v", "url": "ftp://a.test/"}, "want an http or https URL"},
		{map[string]any{"name": "a", "value": "v", "path": "app"}, "does not start with /"},
		{map[string]any{"name": "a", "value": "v", "partitionKey": "https://a.test"}, "needs secure: true"},
		{map[string]any{"name": "a", "value": "v", "color": "red"}, "color"},
	} {
		mustContain(t, e.fails(t, "cookie_set", with(tt.args)), tt.want)
	}
	mustContain(t, e.fails(t, "cookie_list", with(map[string]any{"url": "not a url"})), "want an http or https URL")
	mustContain(t, e.fails(t, "cookie_list", with(map[string]any{"path": "x"})), "want a path from /")
	mustContain(t, e.fails(t, "cookie_delete", page), "name")
}

// TestWebStorageTools: localStorage and sessionStorage of the page's
// origin, and of a frame's origin with origin; sessionStorage is the tab's
// own; an origin the page does not show is refused.
func TestWebStorageTools(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	site := stateSite(t)
	p := openIn(t, e, site.URL+"/framed", "web-storage")
	q := openIn(t, e, site.URL+"/plain", "web-storage")
	page := map[string]any{"pageId": p}
	with := func(more map[string]any) map[string]any {
		m := map[string]any{"pageId": p}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	for _, kind := range []string{"localStorage", "sessionStorage"} {
		tool := strings.ToLower(kind)
		mustContain(t, e.ok(t, tool+"_list", page), "## "+kind+" of "+site.URL, "No items.")
		mustContain(t, e.ok(t, tool+"_set", with(map[string]any{"key": "k", "value": "v-" + kind})), "Set "+kind+` item "k"`)
		e.ok(t, tool+"_set", with(map[string]any{"key": "other", "value": "2"}))
		if got := e.eval(t, p, "() => "+kind+".getItem('k')"); got != `"v-`+kind+`"` {
			t.Errorf("the page reads %s k = %s", kind, got)
		}
		// The other tab: localStorage is the context's, sessionStorage the tab's.
		got := e.eval(t, q, "() => "+kind+".getItem('k')")
		if shared := got == `"v-`+kind+`"`; shared != (kind == "localStorage") {
			t.Errorf("another tab of the context reads %s k = %s", kind, got)
		}
		mustContain(t, e.ok(t, tool+"_list", page), `"k": "v-`+kind+`"`, `"other": "2"`)
		mustContain(t, e.ok(t, tool+"_get", with(map[string]any{"key": "k"})), `"k": "v-`+kind+`"`)
		mustContain(t, e.fails(t, tool+"_get", with(map[string]any{"key": "nope"})), `has no item "nope"`, tool+"_list")
		mustContain(t, e.ok(t, tool+"_delete", with(map[string]any{"key": "k"})), "Deleted "+kind+` item "k"`)
		mustContain(t, e.ok(t, tool+"_delete", with(map[string]any{"key": "k"})), "nothing to delete")
		mustContain(t, e.ok(t, tool+"_clear", page), "Deleted 1 item of "+kind)
		if got := e.eval(t, p, "() => "+kind+".length"); got != "0" {
			t.Errorf("after %s_clear the page has %s items", tool, got)
		}
		mustContain(t, e.fails(t, tool+"_set", with(map[string]any{"key": "k"})), "value")
	}

	// The frame's origin, by name: the storage its document wrote (its own,
	// apart from a tab of that origin's); an origin of no document of the
	// page is refused.
	frame := strings.Replace(site.URL, "127.0.0.1", "localhost", 1)
	mustContain(t, e.ok(t, "localstorage_get", with(map[string]any{"origin": frame, "key": "frame-wrote"})), `"frame-wrote": "`+frame+`"`)
	mustContain(t, e.ok(t, "localstorage_set", with(map[string]any{"origin": frame, "key": "in-frame", "value": "f"})), "of "+frame)
	mustContain(t, e.ok(t, "localstorage_list", with(map[string]any{"origin": frame + "/"})), `"in-frame": "f"`)
	if got := e.ok(t, "localstorage_list", page); strings.Contains(got, "in-frame") {
		t.Errorf("the top document's localStorage has the frame's item:\n%s", got)
	}
	mustContain(t, e.fails(t, "localstorage_list", with(map[string]any{"origin": "https://example.com"})),
		"origin https://example.com is not one of page", site.URL, frame, "new_page")
	mustContain(t, e.fails(t, "localstorage_list", with(map[string]any{"origin": "example.com/app"})), "want scheme://host[:port]")
	blank := openIn(t, e, "about:blank", "web-storage")
	mustContain(t, e.fails(t, "localstorage_list", map[string]any{"pageId": blank}), "no origin to keep storage for", "navigate_page")
}

// TestIndexedDBList: the databases, object stores and record counts the
// page made; a page without any says so.
func TestIndexedDBList(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	site := stateSite(t)
	p := openIn(t, e, site.URL+"/idb", "indexeddb")
	e.ok(t, "wait_for", map[string]any{"pageId": p, "text": []string{"database ready"}})
	got := e.ok(t, "indexeddb_list", map[string]any{"pageId": p})
	mustContain(t, got, "## IndexedDB of "+site.URL, "- shop (version 3): 2 object stores",
		"  - items: 3 records (keyPath id; indexes byName)", "  - log: 1 record (autoIncrement)")
	q := openIn(t, e, site.URL+"/plain", "indexeddb-empty")
	mustContain(t, e.ok(t, "indexeddb_list", map[string]any{"pageId": q}), "No databases.")
}

// TestStorageStateRoundTrip: alice logs in through the form (the server
// sets an httpOnly session cookie, the page keeps a token in
// localStorage) and saves the storage state; bob, another agent with a
// context of his own, is not logged in and sees none of it, cannot reach
// alice's page or write outside his workspace; given the file, he
// restores it and the app shows him logged in. What bob clears stays his.
func TestStorageStateRoundTrip(t *testing.T) {
	t.Parallel()
	e := newIsoEnv(t, pagelock.PerPage, false, 0)
	site := stateSite(t)
	alice, bob := e.as(t, aliceSecret, "state"), e.as(t, bobSecret, "state")

	a := newPageWith(t, alice, site.URL+"/login", nil)
	evalAs(t, alice, a, `() => { document.querySelector("input[name=user]").value = "alice"; document.querySelector("form").submit(); return "sent" }`)
	useOK(t, alice, "wait_for", map[string]any{"pageId": a, "text": []string{"token ok"}})
	saved := useOK(t, alice, "storage_state", map[string]any{"pageId": a, "filename": "state.json"})
	mustContain(t, saved, "1 cookie and 1 localStorage item of 1 origin")
	path := savedPath(t, saved)
	st, err := storagestate.Read(path)
	if err != nil {
		t.Fatalf("the saved file does not read back: %v", err)
	}
	if len(st.Cookies) != 1 || st.Cookies[0].Name != "session" || !st.Cookies[0].HTTPOnly || st.Cookies[0].Expires != -1 ||
		len(st.Origins) != 1 || st.Origins[0].Origin != site.URL || st.Origins[0].LocalStorage[0] != (storagestate.Item{Name: "token", Value: "t0k3n-alice"}) {
		t.Errorf("saved state: %+v", st)
	}

	// Bob: his own context, not logged in, none of alice's.
	b := newPageWith(t, bob, site.URL+"/app", nil)
	mustContain(t, useOK(t, bob, "take_snapshot", map[string]any{"pageId": b}), "Please log in")
	if got := useOK(t, bob, "cookie_list", map[string]any{"pageId": b}); strings.Contains(got, "s3ss10n") {
		t.Errorf("bob's cookie_list shows alice's session:\n%s", got)
	}
	if got := useOK(t, bob, "localstorage_list", map[string]any{"pageId": b}); strings.Contains(got, "t0k3n") {
		t.Errorf("bob's localstorage_list shows alice's token:\n%s", got)
	}
	for _, tool := range []string{"cookie_list", "cookie_clear", "localstorage_list", "sessionstorage_clear", "indexeddb_list", "storage_state"} {
		if text, failed := use(t, bob, tool, map[string]any{"pageId": a}); !failed || strings.Contains(text, "s3ss10n") || strings.Contains(text, "t0k3n") {
			t.Errorf("bob's %s on alice's page %d: %s", tool, a, text)
		}
	}
	for _, tt := range []struct{ tool, file string }{
		{"storage_state", "../../escape.json"},
		{"storage_state", filepath.Join(os.TempDir(), "outside.json")},
		{"storage_state", filepath.Join(filepath.Dir(path), "into-alice.json")},
		{"set_storage_state", path},
	} {
		if text, failed := use(t, bob, tt.tool, map[string]any{"pageId": b, "filename": tt.file}); !failed || !strings.Contains(text, "outside the allowed roots") {
			t.Errorf("bob's %s to %s: %s", tt.tool, tt.file, text)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "into-alice.json")); err == nil {
		t.Error("bob wrote into alice's directory")
	}

	// Alice hands bob the file; he restores it and is logged in.
	probe := savedPath(t, useOK(t, bob, "storage_state", map[string]any{"pageId": b, "filename": "probe.json"}))
	handed := filepath.Join(filepath.Dir(probe), "from-alice.json")
	data, _ := os.ReadFile(path)
	writeState(t, handed, string(data))
	mustContain(t, useOK(t, bob, "set_storage_state", map[string]any{"pageId": b, "filename": "from-alice.json"}), "Restored 1 cookie and 1 localStorage item of 1 origin")
	if got := evalAs(t, bob, b, "() => localStorage.getItem('token')"); !strings.Contains(got, `"t0k3n-alice"`) {
		t.Errorf("bob's page on the origin does not read the restored token at once: %s", got)
	}
	useOK(t, bob, "navigate_page", map[string]any{"pageId": b, "url": site.URL + "/app"})
	mustContain(t, useOK(t, bob, "take_snapshot", map[string]any{"pageId": b}), "Signed in as alice", "token ok")

	// An origin no page of bob's shows gets its items in the documents of
	// it his pages load later, before their scripts run.
	other := strings.Replace(site.URL, "127.0.0.1", "localhost", 1)
	writeState(t, filepath.Join(filepath.Dir(probe), "other.json"), `{"cookies": [], "origins": [{"origin": "`+other+`", "localStorage": [{"name": "theme", "value": "dark"}]}]}`)
	mustContain(t, useOK(t, bob, "set_storage_state", map[string]any{"pageId": b, "filename": "other.json"}), "No page shows "+other+" yet")
	useOK(t, bob, "navigate_page", map[string]any{"pageId": b, "url": other + "/plain"})
	if got := evalAs(t, bob, b, "() => localStorage.getItem('theme')"); !strings.Contains(got, `"dark"`) {
		t.Errorf("after set_storage_state, a document of %s that bob's page loaded reads theme %s", other, got)
	}

	// What bob clears is his: alice is still logged in.
	useOK(t, bob, "cookie_clear", map[string]any{"pageId": b})
	useOK(t, bob, "localstorage_clear", map[string]any{"pageId": b})
	mustContain(t, useOK(t, alice, "cookie_list", map[string]any{"pageId": a}), "session=s3ss10n-alice")
	mustContain(t, useOK(t, alice, "localstorage_get", map[string]any{"pageId": a, "key": "token"}), "t0k3n-alice")

	// A bad file is refused with what it should be.
	for _, tt := range []struct{ file, want string }{
		{`{"cookies": [{"name": "sid", "value": "hunter2", "domain": "a.test", "sameSite": "lax"}]}`, `cookies[0] (sid) has sameSite "lax"`},
		{`{"cookies": [`, "not JSON at line 1"},
		{`{}`, "no cookies and no origins"},
	} {
		writeState(t, filepath.Join(filepath.Dir(probe), "bad.json"), tt.file)
		text, failed := use(t, bob, "set_storage_state", map[string]any{"pageId": b, "filename": "bad.json"})
		if !failed || !strings.Contains(text, tt.want) || !strings.Contains(text, "storageState({path})") || strings.Contains(text, "hunter2") {
			t.Errorf("set_storage_state of %s: %s", tt.file, text)
		}
	}
	mustContain(t, failedText(use(t, bob, "set_storage_state", map[string]any{"pageId": b, "filename": "missing.json"})), "cannot read")
	huge, err := os.Create(filepath.Join(filepath.Dir(probe), "huge.json"))
	if err != nil {
		t.Fatal(err)
	}
	huge.Truncate(maxStateFile + 1)
	huge.Close()
	mustContain(t, failedText(use(t, bob, "set_storage_state", map[string]any{"pageId": b, "filename": "huge.json"})), "past the 64 MiB")
}

// writeState writes a storage state file, as an agent's user would.
func writeState(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// failedText is the text of a call that must fail.
func failedText(text string, failed bool) string {
	if !failed {
		return "(it did not fail) " + text
	}
	return text
}

// savedPath is the file a storage_state answer says it saved to.
func savedPath(t *testing.T, answer string) string {
	t.Helper()
	m := regexp.MustCompile(`to (/\S+\.json):`).FindStringSubmatch(answer)
	if m == nil {
		t.Fatalf("no saved file in: %s", answer)
	}
	return m[1]
}
