package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/secrets"
	"github.com/pagemux/pagemux/serve"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// savedTo is the file and size a har_save or pdf_save answer names.
var savedTo = regexp.MustCompile(`(?m) to (/\S+) \((\d+) bytes\)`)

// savedFile reads the file a save answer names.
func savedFile(t *testing.T, answer string) (string, []byte) {
	t.Helper()
	m := savedTo.FindStringSubmatch(answer)
	if m == nil {
		t.Fatalf("no saved file in the answer:\n%s", answer)
	}
	data, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(m[2]); n != len(data) {
		t.Errorf("the answer says %d bytes, the file has %d", n, len(data))
	}
	return m[1], data
}

// harSchema compiles the HAR 1.2 schema of the npm package har-schema
// (testdata/har-schema, ISC), asserting its formats (date-time, uri, ip).
func harSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	const base = "file:///har-schema/"
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	files, err := filepath.Glob("testdata/har-schema/*.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("the HAR schema files: %v %v", files, err)
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource(base+filepath.Base(f), doc); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile(base + "har.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// harFile is what the tests read of a HAR.
type harFile struct {
	Log struct {
		Version string
		Creator struct{ Name string }
		Comment string
		Pages   []struct{ ID, Title string }
		Entries []harEntry
	}
}

type harEntry struct {
	PageRef         string
	StartedDateTime string
	Time            float64
	ReqID           int    `json:"_reqid"`
	ResourceType    string `json:"_resourceType"`
	Request         struct {
		Method, URL string
		Headers     []struct{ Name, Value string }
		PostData    *struct{ MimeType, Text string }
	}
	Response struct {
		Status      int
		Error       string `json:"_error"`
		RedirectURL string
		Headers     []struct{ Name, Value string }
		Cookies     []struct{ Name, Value string }
		Content     struct {
			Size                    int
			MimeType, Text, Comment string
			Encoding                string
		}
	}
	Timings map[string]float64
}

// readHAR validates a saved HAR against the schema and decodes it.
func readHAR(t *testing.T, schema *jsonschema.Schema, answer string) harFile {
	t.Helper()
	_, data := savedFile(t, answer)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
	if err != nil {
		t.Fatalf("the HAR is not JSON: %v", err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("the HAR fails the HAR 1.2 schema: %v", err)
	}
	var h harFile
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	// What the schema says in keywords its validators ignore ("min").
	for _, e := range h.Log.Entries {
		if e.Time < 0 {
			t.Errorf("reqid=%d: time %v", e.ReqID, e.Time)
		}
		sum := 0.0
		for phase, v := range e.Timings {
			if v < -1 || (v < 0 && (phase == "send" || phase == "wait" || phase == "receive")) {
				t.Errorf("reqid=%d: timing %s is %v", e.ReqID, phase, v)
			}
			if v > 0 && phase != "ssl" {
				sum += v
			}
		}
		if d := sum - e.Time; d > 0.01 || d < -0.01 {
			t.Errorf("reqid=%d: time %v, its phases sum to %v", e.ReqID, e.Time, sum)
		}
	}
	return h
}

// byPath files entries by URL path and query, without openPage's marker.
func byPath(h harFile) map[string]harEntry {
	out := map[string]harEntry{}
	for _, e := range h.Log.Entries {
		path := strings.TrimPrefix(e.Request.URL, testSite.URL)
		if i := strings.Index(path, "open="); i > 0 {
			path = path[:i-1]
		}
		out[path] = e
	}
	return out
}

// settled waits until the network page's requests are all listed and none
// is pending, and returns them as requests() maps them.
func settled(t *testing.T, e *testEnv, page int, paths ...string) map[string]string {
	t.Helper()
	text := e.waitFor(t, "list_network_requests", map[string]any{"pageId": page}, "settled requests", func(s string) bool {
		list := requests(t, s)
		for _, p := range paths {
			if _, ok := list[p]; !ok {
				return false
			}
		}
		return !strings.Contains(s, "[pending]")
	})
	return requests(t, text)
}

// TestHARSave: the requests of a real page, as list_network_requests shows
// them, in a HAR that the HAR 1.2 schema accepts, with statuses, headers,
// cookies, bodies (text, binary, cut, none for a redirect), failures and
// timings; since har_start, across a navigation; since a reqid; without
// bodies; and bad input refused with what to do.
func TestHARSave(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	schema := harSchema(t)
	id := e.openPage(t, "/network.html")
	list := settled(t, e, id, "/network.html", "/missing.png", "/api/data?x=1", "/net/status?code=404", "/net/abort",
		"/net/echo", "/net/redirect", "/api/data?x=2", "/net/binary", "/net/big")
	dir := fmt.Sprintf("har-test-%d", id)

	answer := e.ok(t, "har_save", map[string]any{"pageId": id, "filename": dir + "/net.har", "maxBodySize": 1000})
	mustContain(t, answer, fmt.Sprintf("Saved the HAR of page %d to ", id), "requests, since the current document.", "Response bodies: ", "(1 cut at 1000 bytes), ")
	h := readHAR(t, schema, answer)
	if h.Log.Version != "1.2" || h.Log.Creator.Name != "pagemux" || !strings.Contains(h.Log.Comment, "keeps the requests of a page's current document and the 3 before it") {
		t.Errorf("log: %+v", h.Log)
	}
	if len(h.Log.Pages) != 1 || !strings.Contains(h.Log.Pages[0].Title, "/network.html") {
		t.Errorf("pages: %+v", h.Log.Pages)
	}
	entries := byPath(h)
	// Chrome asks for a favicon when it likes: it may come after the list.
	for path, en := range entries {
		if _, ok := list[path]; !ok && path != "/favicon.ico" {
			t.Errorf("reqid=%d %s is in the HAR, not in the list", en.ReqID, path)
		}
	}
	// Every request listed is in the HAR under its reqid, with its status.
	for path, line := range list {
		en, ok := entries[path]
		if !ok {
			t.Errorf("%s (%s) is not in the HAR", path, line)
			continue
		}
		status := strconv.Itoa(en.Response.Status)
		if en.Response.Error != "" {
			status = en.Response.Error
		}
		if want := fmt.Sprintf("%d %s [%s]", en.ReqID, en.Request.Method, status); line != want {
			t.Errorf("%s: listed as %q, in the HAR as %q", path, line, want)
		}
	}
	doc := entries["/network.html"]
	if doc.ResourceType != "document" || !strings.Contains(doc.Response.Content.Text, `fetch("/net/echo"`) || doc.Response.Content.MimeType != "text/html" || doc.PageRef != h.Log.Pages[0].ID {
		t.Errorf("the document: %+v", doc)
	}
	echo := entries["/net/echo"]
	if echo.Request.PostData == nil || echo.Request.PostData.Text != "ping=1" || echo.Request.PostData.MimeType != "text/plain" || echo.Response.Content.Text != "echo: ping=1" {
		t.Errorf("the POST: %+v", echo)
	}
	if c := echo.Response.Cookies; len(c) != 2 || c[0].Name+"="+c[0].Value != "a=1" || c[1].Name+"="+c[1].Value != "b=2" {
		t.Errorf("the POST's Set-Cookie: %+v", c)
	}
	if !hasHeader(echo.Response.Headers, "x-echo", "yes") || !hasHeader(echo.Request.Headers, "content-type", "text/plain") {
		t.Errorf("the POST's headers: %+v / %+v", echo.Request.Headers, echo.Response.Headers)
	}
	if c := entries["/net/binary"].Response.Content; c.Encoding != "base64" || c.Text != "//4AAYA=" || c.Size != 5 {
		t.Errorf("the binary body: %+v", c)
	}
	if c := entries["/net/big"].Response.Content; len(c.Text) != 1000 || c.Size != 50000 || c.Comment != "body cut to its first 1000 of 50000 bytes" {
		t.Errorf("the big body: %d bytes of %d, %q", len(c.Text), c.Size, c.Comment)
	}
	if r := entries["/net/redirect"].Response; r.Status != 302 || r.RedirectURL != testSite.URL+"/api/data?x=2" || r.Content.Text != "" {
		t.Errorf("the redirect: %+v", r)
	}
	if a := entries["/net/abort"]; a.Response.Status != 0 || a.Response.Error != "net::ERR_EMPTY_RESPONSE" {
		t.Errorf("the failed request: %+v", a)
	}
	if tm := entries["/api/data?x=1"].Timings; tm["wait"] <= 0 || tm["send"] < 0 {
		t.Errorf("the fetch's timings: %v", tm)
	}
	devtoolsImport(t, answer, h)

	// Without bodies.
	omit := e.ok(t, "har_save", map[string]any{"pageId": id, "filename": dir + "/omit.har", "content": "omit"})
	mustContain(t, omit, "Response bodies left out")
	for _, en := range readHAR(t, schema, omit).Log.Entries {
		if en.Response.Content.Text != "" {
			t.Errorf("content omit, yet reqid=%d has a body", en.ReqID)
		}
	}

	// Since a reqid: that request and the later ones.
	big := reqID(t, list, "/net/big")
	since := readHAR(t, schema, e.ok(t, "har_save", map[string]any{"pageId": id, "filename": dir + "/since.har", "since": strconv.Itoa(big)}))
	if len(since.Log.Entries) == 0 || since.Log.Entries[0].ReqID != big {
		t.Errorf("since reqid=%d: %+v", big, since.Log.Entries)
	}
	for _, en := range since.Log.Entries {
		if en.ReqID < big {
			t.Errorf("since reqid=%d holds reqid=%d", big, en.ReqID)
		}
	}

	// From har_start on, across a navigation.
	started := e.ok(t, "har_start", map[string]any{"pageId": id})
	mustContain(t, started, fmt.Sprintf("Recording the traffic of page %d from now on", id))
	var mark int
	fmt.Sscanf(started[strings.Index(started, "reqid=")+len("reqid="):], "%d", &mark)
	e.eval(t, id, `async () => (await fetch("/api/data?x=9")).text()`)
	settled(t, e, id, "/api/data?x=9")
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "url", "url": testSite.URL + "/page2.html"})
	settled(t, e, id, "/page2.html")
	rec := e.ok(t, "har_save", map[string]any{"pageId": id, "filename": dir + "/rec.har"})
	mustContain(t, rec, "since har_start at ")
	recorded := readHAR(t, schema, rec)
	got := byPath(recorded)
	// Chrome dropped the first document's bodies with it: the answer and
	// the entry say so.
	x9 := got["/api/data?x=9"]
	mustContain(t, rec, "not available.\n- Chrome no longer holds it", fmt.Sprintf("reqid=%d", x9.ReqID), "Save before navigating")
	if x9.Response.Content.Text != "" || !strings.HasPrefix(x9.Response.Content.Comment, "body not available: Chrome no longer holds it") {
		t.Errorf("a body Chrome dropped: %+v", x9.Response.Content)
	}
	_, fetched := got["/api/data?x=9"]
	_, navigated := got["/page2.html"]
	if !fetched || !navigated || len(recorded.Log.Pages) != 2 {
		t.Errorf("since har_start: %v entries, %d pages; want /api/data?x=9 and /page2.html on 2 pages", keys(got), len(recorded.Log.Pages))
	}
	for _, en := range recorded.Log.Entries {
		if en.ReqID <= mark {
			t.Errorf("since har_start after reqid=%d: reqid=%d %s", mark, en.ReqID, en.Request.URL)
		}
	}

	// includePreservedRequests asks for documents, har_start or not.
	kept := e.ok(t, "har_save", map[string]any{"pageId": id, "filename": dir + "/kept.har", "includePreservedRequests": true})
	mustContain(t, kept, "since the current document and those kept before it.")
	if _, ok := byPath(readHAR(t, schema, kept))["/network.html"]; !ok {
		t.Errorf("includePreservedRequests after har_start lacks the first document:\n%s", kept)
	}

	// Bad input.
	fresh := e.openPage(t, "/page2.html")
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"content": "inline"}, `invalid argument "content" for har_save: want one of "embed", "omit"`},
		{map[string]any{"maxBodySize": 0}, `invalid argument "maxBodySize" for har_save`},
		{map[string]any{"since": "abc"}, `invalid since "abc": want "start", "document" or a reqid`},
		{map[string]any{"since": "999999"}, "no request with reqid 999999 on page"},
		{map[string]any{"since": "start", "includePreservedRequests": true}, "includePreservedRequests goes with since \"document\""},
		{map[string]any{"pageId": fresh, "since": "start"}, fmt.Sprintf("no har_start on page %d: call har_start first", fresh)},
		{map[string]any{"filename": "/etc/pagemux-test.har"}, "is outside the allowed roots"},
	} {
		args := map[string]any{"pageId": id}
		for k, v := range tt.args {
			args[k] = v
		}
		mustContain(t, e.fails(t, "har_save", args), tt.want)
	}
	if _, err := os.Stat("/etc/pagemux-test.har"); err == nil {
		t.Error("a HAR was written outside the workspace")
	}
}

// devtoolsImportJS imports a HAR as Chrome DevTools' network panel does
// (Import HAR file: HARRoot, which checks the format, then the Importer) and
// lists each request as the panel shows it: url, method, status, type,
// size received, and the start of its body (base64 for binary data).
const devtoolsImportJS = `async () => {
  const HAR = await import('./models/har/har.js');
  const root = new HAR.HARFormat.HARRoot(%s);
  const out = [];
  for (const r of HAR.Importer.Importer.requestsFromHARLog(root.log)) {
    const c = await r.requestContentData();
    const body = c.isTextContent ? c.text : c.base64;
    out.push([r.url(), r.requestMethod, r.statusCode, r.resourceType().name(), r.transferSize, (body || '').slice(0, 20)].join(' '));
  }
  return out;
}`

// devtoolsImport loads the HAR an answer names into Chrome DevTools' own
// importer, in a DevTools page of the full Chrome (the headless shell
// loads no devtools: page), and checks that it lists every entry with its
// status, type and body.
func devtoolsImport(t *testing.T, answer string, h harFile) {
	t.Helper()
	e := sharedFullEnv(t)
	_, data := savedFile(t, answer)
	const devtools = "devtools://devtools/bundled/devtools_app.html"
	page := 0
	for _, line := range strings.Split(e.ok(t, "new_page", map[string]any{"url": devtools, "background": true}), "\n") {
		if n, err := strconv.Atoi(strings.SplitN(line, ":", 2)[0]); err == nil && strings.Contains(line, "("+devtools+")") {
			page = max(page, n)
		}
	}
	if page == 0 {
		t.Fatal("no DevTools page")
	}
	t.Cleanup(func() {
		e.client.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "close_page", Arguments: map[string]any{"pageId": page}}})
	})
	var got []string
	if err := json.Unmarshal([]byte(e.eval(t, page, fmt.Sprintf(devtoolsImportJS, data))), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(h.Log.Entries) {
		t.Fatalf("DevTools imported %d requests of %d:\n%s", len(got), len(h.Log.Entries), strings.Join(got, "\n"))
	}
	listed := strings.Join(got, "\n") + "\n"
	for _, en := range h.Log.Entries {
		body := en.Response.Content.Text
		if len(body) > 20 {
			body = body[:20]
		}
		want := fmt.Sprintf("%s %s %d %s ", en.Request.URL, en.Request.Method, en.Response.Status, en.ResourceType)
		if !strings.Contains(listed, want) {
			t.Errorf("DevTools lists no %q:\n%s", want, listed)
		}
		if body != "" && !strings.Contains(listed, " "+body+"\n") {
			t.Errorf("DevTools shows %s without its body %q:\n%s", en.Request.URL, body, listed)
		}
	}
}

// settledAs waits until an agent's page lists a request for path that is
// no longer pending.
func settledAs(t *testing.T, c *client.Client, page int, path string) {
	t.Helper()
	mcptest.WaitFor(t, "a settled request for "+path, func() bool {
		text, _ := use(t, c, "list_network_requests", map[string]any{"pageId": page})
		v, ok := requests(t, text)[path]
		return ok && !strings.HasSuffix(v, "[pending]")
	})
}

// hasHeader reports whether headers hold name (in any case) with value.
func hasHeader(headers []struct{ Name, Value string }, name, value string) bool {
	for _, h := range headers {
		if strings.EqualFold(h.Name, name) && strings.HasPrefix(h.Value, value) {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// harPIN is alice's secret in TestHARPDFIsolation.
const harPIN = "har-pin-4711-0815"

// newHAREnv is newIsoEnv's server (tokens alice and bob, a browser context
// each) with a secret of alice's, ALICE_PIN.
func newHAREnv(t *testing.T) *isoEnv {
	t.Helper()
	set, err := secrets.Parse(strings.NewReader("ALICE_PIN="+harPIN+"\n"), "alice.env")
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.New(agents.Owned)
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute},
		Server: Options{Agents: reg, IsolateAgents: true, AgentSecrets: map[string]*secrets.Set{"alice": set}}})
	ts := httptest.NewServer(serve.NewHTTP(e.srv.MCP(), serve.HTTPOptions{Tokens: map[string]string{"alice": aliceSecret, "bob": bobSecret}}))
	t.Cleanup(ts.Close)
	return &isoEnv{testEnv: e, url: ts.URL, reg: reg}
}

// TestHARPDFIsolation: over HTTP, bob cannot record, save or print alice's
// page, nor write where alice's files are or outside his workspace; his own
// HAR holds none of alice's traffic. A secret alice typed and posted shows
// as its name in her HAR, and a page that shows it is not printed.
func TestHARPDFIsolation(t *testing.T) {
	t.Parallel()
	e := newHAREnv(t)
	alice, bob := e.as(t, aliceSecret, "har"), e.as(t, bobSecret, "har")
	mine := newPageAs(t, alice, "/network.html?who=alice-private")
	text, failed := use(t, alice, "har_save", map[string]any{"pageId": mine, "filename": "alice.har"})
	if failed {
		t.Fatal(text)
	}
	alicePath, aliceHAR := savedFile(t, text)
	if !strings.Contains(string(aliceHAR), "who=alice-private") {
		t.Fatalf("alice's HAR lacks her page:\n%.500s", aliceHAR)
	}

	// Bob's calls on alice's page.
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"har_start", map[string]any{"pageId": mine}},
		{"har_save", map[string]any{"pageId": mine, "filename": "stolen.har"}},
		{"har_save", map[string]any{"pageId": mine, "filename": "stolen2.har", "since": "1"}},
		{"pdf_save", map[string]any{"pageId": mine, "filename": "stolen.pdf"}},
	} {
		text, failed := use(t, bob, call.tool, call.args)
		if !failed || !strings.Contains(text, "belongs to another agent") || strings.Contains(text, "alice-private") {
			t.Errorf("bob's %s on alice's page %d: failed=%v %s", call.tool, mine, failed, text)
		}
	}

	// Bob's own page, written where he may not write.
	theirs := newPageAs(t, bob, "/page2.html?who=bob")
	for _, call := range []struct {
		tool, filename string
	}{
		{"har_save", alicePath},
		{"pdf_save", alicePath},
		{"har_save", filepath.Join(filepath.Dir(alicePath), "planted.har")},
		{"pdf_save", "../planted.pdf"},
		{"har_save", "/tmp/pagemux-bob-planted.har"},
	} {
		text, failed := use(t, bob, call.tool, map[string]any{"pageId": theirs, "filename": call.filename})
		if !failed || !strings.Contains(text, "outside the allowed roots") {
			t.Errorf("bob's %s to %s: failed=%v %s", call.tool, call.filename, failed, text)
		}
	}
	if now, err := os.ReadFile(alicePath); err != nil || string(now) != string(aliceHAR) {
		t.Errorf("alice's HAR changed under bob's calls: %v", err)
	}
	for _, p := range []string{filepath.Join(filepath.Dir(alicePath), "planted.har"), "/tmp/pagemux-bob-planted.har"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("bob planted %s", p)
		}
	}

	// Bob's own HAR: his traffic only.
	text, failed = use(t, bob, "har_save", map[string]any{"pageId": theirs, "filename": "bob.har"})
	if failed {
		t.Fatal(text)
	}
	bobPath, bobHAR := savedFile(t, text)
	if strings.Contains(string(bobHAR), "alice") || !strings.Contains(string(bobHAR), "who=bob") || filepath.Dir(bobPath) == filepath.Dir(alicePath) {
		t.Errorf("bob's HAR at %s:\n%.500s", bobPath, bobHAR)
	}
	text, failed = use(t, bob, "pdf_save", map[string]any{"pageId": theirs, "filename": "bob.pdf"})
	if failed {
		t.Fatal(text)
	}
	if _, pdf := savedFile(t, text); !strings.HasPrefix(string(pdf), "%PDF-") {
		t.Errorf("bob's PDF starts %.20q", pdf)
	}

	// Alice's secret, typed into a field and posted: her HAR names it, her
	// PDF is refused while the page shows it.
	form := newPageAs(t, alice, "/form.html")
	snap, _ := use(t, alice, "take_snapshot", map[string]any{"pageId": form})
	box := uidIn(t, snap, `textbox "Name"`)
	if text, failed := use(t, alice, "fill", map[string]any{"pageId": form, "uid": box, "value": "${ALICE_PIN}"}); failed {
		t.Fatal(text)
	}
	evalAs(t, alice, form, `async () => (await fetch("/net/echo", {method: "POST", body: "pin=" + document.getElementById("name").value})).text()`)
	settledAs(t, alice, form, "/net/echo")
	text, failed = use(t, alice, "har_save", map[string]any{"pageId": form, "filename": "secret.har"})
	if failed {
		t.Fatal(text)
	}
	_, har := savedFile(t, text)
	if strings.Contains(string(har), harPIN) || !strings.Contains(string(har), "pin=${ALICE_PIN}") || !strings.Contains(string(har), "echo: pin=${ALICE_PIN}") {
		t.Errorf("the HAR of a posted secret:\n%s", har)
	}
	text, failed = use(t, alice, "pdf_save", map[string]any{"pageId": form, "filename": "secret.pdf"})
	if !failed || !strings.Contains(text, "shows the value of a secret") || strings.Contains(text, harPIN) {
		t.Errorf("pdf_save of a page that shows a secret: failed=%v %s", failed, text)
	}
	if text, failed := use(t, alice, "fill", map[string]any{"pageId": form, "uid": box, "value": ""}); failed {
		t.Fatal(text)
	}
	if text, failed := use(t, alice, "pdf_save", map[string]any{"pageId": form, "filename": "secret.pdf"}); failed {
		t.Errorf("pdf_save once the secret is gone from the page: %s", text)
	}
}

// TestHARNotes: what a HAR and its answer say it lacks: requests the
// collector dropped, a late start, bodies left out; and a long list of
// reqids cut.
func TestHARNotes(t *testing.T) {
	sel := harSelection{since: "reqid=5", lost: 3, partial: true}
	got := sel.comment(&harSaveArgs{Content: "omit"})
	for _, want := range []string{"(requests since reqid=5)", "the 3 before it, at most 1000 each", "3 requests of this span are missing",
		"Recording began after a document here had started", `Response bodies were left out (content "omit").`} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the comment %q", want, got)
		}
	}
	if got := (harSelection{since: "the current document"}).comment(&harSaveArgs{}); strings.Contains(got, "missing") || strings.Contains(got, "left out") {
		t.Errorf("a complete HAR's comment: %q", got)
	}
	ids := make([]int, maxListedMissing+5)
	for i := range ids {
		ids[i] = i + 1
	}
	if got := reqidList(ids); !strings.HasPrefix(got, "reqid=1, reqid=2,") || !strings.HasSuffix(got, fmt.Sprintf("reqid=%d, and 5 more", maxListedMissing)) {
		t.Errorf("reqidList: %s", got)
	}
}
