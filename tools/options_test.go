package tools

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/pagelock"
)

// The options that tools gained beyond their first version: evaluate_script
// args and filePath, take_screenshot and take_snapshot filePath,
// navigate_page initScript, handleBeforeUnload and timeout, and new_page
// isolatedContext.

func TestEvaluateScriptArgs(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	name, submit := uidIn(t, snap, `textbox "Name"`), uidIn(t, snap, `button "Submit"`)

	text := e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "(a, b) => [a.id, b.textContent, this === window]", "args": []string{name, submit}})
	mustContain(t, text, "```json\n[\"name\",\"Submit\",true]\n```")
	// A promise and a trailing semicolon, as agents write them.
	text = e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "async (el) => { el.value = 'set'; return el.value };", "args": []string{name}})
	mustContain(t, text, "\"set\"")
	mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "(el) => { throw new Error('bad ' + el.id) }", "args": []string{name}}), "Error: bad name")
	mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "(el) => el.id", "args": []string{"88_88"}}), "88_88", "take a new snapshot")

	// After a navigation the uids of the old document are stale.
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "reload"})
	msg := e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "(el) => el.id", "args": []string{name}})
	mustContain(t, msg, "uid "+name, "before the page navigated", "take a new snapshot")
}

func TestEvaluateScriptFilePath(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	path := filepath.Join(t.TempDir(), "out", "result.json")
	text := e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => ({title: document.title, n: [1, 2]})", "filePath": path})
	if text != "Script ran on page. Output saved to "+path+"." {
		t.Fatalf("answer:\n%s", text)
	}
	if got, _ := os.ReadFile(path); string(got) != `{"title":"Harness Form","n":[1,2]}` {
		t.Fatalf("file holds %q", got)
	}
	// A value too big to show inline is saved whole.
	e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 'x'.repeat(400000)", "filePath": path})
	if got, _ := os.ReadFile(path); len(got) != 400002 {
		t.Fatalf("big value saved as %d bytes", len(got))
	}
	msg := e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => { window.ranOutside = 1; return 1 }", "filePath": "/proc/nope.json"})
	mustContain(t, msg, `"/proc/nope.json" is outside the allowed roots`, os.TempDir())
	if got := e.eval(t, id, "() => window.ranOutside === undefined"); got != "true" {
		t.Errorf("the script ran although its output could not be saved")
	}
}

func TestScreenshotFiles(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	dir := t.TempDir()

	path := filepath.Join(dir, "shot.png")
	r := e.call(t, "take_screenshot", map[string]any{"pageId": id, "filePath": path})
	if r.isError || len(r.images) != 0 {
		t.Fatalf("filePath: error=%v images=%d: %s", r.isError, len(r.images), r.text)
	}
	if r.text != "Took a screenshot of the current page's viewport.\nSaved screenshot to "+path+"." {
		t.Fatalf("answer:\n%s", r.text)
	}
	if got, _ := os.ReadFile(path); !bytes.HasPrefix(got, []byte("\x89PNG")) {
		t.Fatalf("%s is not a PNG", path)
	}
	mustContain(t, e.fails(t, "take_screenshot", map[string]any{"pageId": id, "filePath": "/proc/shot.png"}), "outside the allowed roots")

	// webp, inline.
	r = e.call(t, "take_screenshot", map[string]any{"pageId": id, "format": "webp", "quality": 60})
	if r.isError || len(r.images) != 1 || r.images[0].MIMEType != "image/webp" {
		t.Fatalf("webp: %+v", r)
	}
	data, _ := base64.StdEncoding.DecodeString(r.images[0].Data)
	if len(data) < 12 || string(data[:4]) != "RIFF" || string(data[8:12]) != "WEBP" {
		t.Fatalf("not a webp image: % x", data[:min(len(data), 12)])
	}

	// An image over 2 MB goes to a temporary file instead: a full page of
	// noise does not compress.
	e.eval(t, id, `() => {
		const c = document.createElement('canvas'); c.width = 1200; c.height = 1200;
		const ctx = c.getContext('2d'); const img = ctx.createImageData(1200, 1200);
		for (let i = 0; i < img.data.length; i++) img.data[i] = (i % 4 === 3) ? 255 : Math.random() * 256;
		ctx.putImageData(img, 0, 0); document.body.append(c); return 1 }`)
	r = e.call(t, "take_screenshot", map[string]any{"pageId": id, "fullPage": true})
	if r.isError || len(r.images) != 0 {
		t.Fatalf("big image: error=%v images=%d: %.200s", r.isError, len(r.images), r.text)
	}
	m := regexp.MustCompile(`Saved screenshot to (.+\.png)\.`).FindStringSubmatch(r.text)
	if m == nil {
		t.Fatalf("big image answer:\n%s", r.text)
	}
	defer os.Remove(m[1])
	if fi, err := os.Stat(m[1]); err != nil || fi.Size() < 2<<20 {
		t.Fatalf("saved big image: %v %v", fi, err)
	}
}

func TestSnapshotFilePath(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	path := filepath.Join(t.TempDir(), "snap.txt")
	text := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "filePath": path})
	if text != "Saved snapshot to "+path+"." {
		t.Fatalf("answer:\n%s", text)
	}
	got, _ := os.ReadFile(path)
	mustContain(t, string(got), `RootWebArea "Harness Form"`, `button "Submit"`)
	// The saved uids are the page's current ones.
	uid := uidIn(t, string(got), `button "Alert"`)
	text = e.ok(t, "click", map[string]any{"pageId": id, "uid": uid})
	mustContain(t, text, "alert: boom.")
	e.ok(t, "handle_dialog", map[string]any{"pageId": id, "action": "accept"})
	mustContain(t, e.fails(t, "take_snapshot", map[string]any{"pageId": id, "filePath": "/proc/snap.txt"}), "outside the allowed roots")
}

func TestNavigateInitScript(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/page2.html", "initScript": "window.__init = (window.__init || 0) + 42"})
	if got := e.eval(t, id, "() => window.__init"); got != "42" {
		t.Fatalf("initScript did not run once before the page: %s", got)
	}
	// Only for that navigation.
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "reload"})
	if got := e.eval(t, id, "() => window.__init"); got != "undefined" {
		t.Fatalf("initScript ran on a later navigation: %s", got)
	}
	// On a reload too, and it runs before the page's own scripts.
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "reload", "initScript": "window.__first = document.scripts.length"})
	if got := e.eval(t, id, "() => window.__first"); got != "0" {
		t.Fatalf("initScript on reload: %s", got)
	}
}

func TestNavigateBeforeUnload(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/beforeunload.html")
	// Chrome asks only on a page the user interacted with.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": e.uid(t, id, `button "Touch"`)})
	start := e.eval(t, id, "() => location.href")

	text := e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/page2.html", "handleBeforeUnload": "dismiss"})
	mustContain(t, text, "Stayed on", "Dismissed a beforeunload dialog.", "## Pages")
	if got := e.eval(t, id, "() => location.href"); got != start {
		t.Fatalf("a dismissed beforeunload let the page go to %s", got)
	}
	if strings.Contains(text, "# Open dialog") {
		t.Fatalf("the answered dialog is still reported:\n%s", text)
	}

	text = e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/page2.html"})
	// The env is shared: another test closing the selected page adds a
	// note between the dialog's line and the page list.
	mustContain(t, text, "Successfully navigated to "+testSite.URL+"/page2.html.\nAccepted a beforeunload dialog.\n", "## Pages")
	if got := e.eval(t, id, "() => location.pathname"); got != `"/page2.html"` {
		t.Fatalf("an accepted beforeunload kept the page at %s", got)
	}
	// No beforeunload handler: no line about one.
	text = e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "back"})
	if strings.Contains(text, "a beforeunload dialog") {
		t.Fatalf("a navigation without a beforeunload dialog reports one:\n%s", text)
	}
	mustContain(t, e.fails(t, "navigate_page", map[string]any{"pageId": id, "type": "reload", "handleBeforeUnload": "maybe"}), `invalid argument "handleBeforeUnload" for navigate_page: want one of "accept", "dismiss", got "maybe"`)
}

// A short timeout ends a navigation to a slow server with an error that says
// what to do, long before the server answers.
func TestNavigateTimeout(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	start := time.Now()
	msg := e.fails(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/slow?ms=8000", "timeout": 500})
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("a 500 ms timeout took %s", took)
	}
	mustContain(t, msg, "navigation timed out", "longer timeout")
	// The page is usable afterwards.
	text := e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/page2.html"})
	mustContain(t, text, fmt.Sprintf("%d: Page Two (%s/page2.html)", id, testSite.URL))
}

// Pages of one isolated context share cookies and storage; pages of other
// contexts, and of none, do not; a context whose pages all closed is gone.
func TestIsolatedContexts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}})
	open := func(context string) int {
		t.Helper()
		url := fmt.Sprintf("%s/page2.html?ctx=%s&n=%d", testSite.URL, context, openCount.Add(1))
		args := map[string]any{"url": url}
		if context != "" {
			args["isolatedContext"] = context
		}
		text := e.ok(t, "new_page", args)
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, url) {
				if context != "" && !strings.HasSuffix(line, " [selected] isolatedContext="+context) {
					t.Fatalf("page line %q lacks its context", line)
				}
				n, _ := strconv.Atoi(line[:strings.Index(line, ":")])
				return n
			}
		}
		t.Fatalf("no page with %s in:\n%s", url, text)
		return 0
	}
	a1, a2, b1, plain := open("alpha"), open("alpha"), open("beta"), open("")
	e.eval(t, a1, "() => { document.cookie = 'who=alpha; path=/'; localStorage.setItem('who', 'alpha'); return 1 }")
	read := func(id int) string {
		t.Helper()
		return e.eval(t, id, "() => document.cookie + '|' + localStorage.getItem('who')")
	}
	if got := read(a2); got != `"who=alpha|alpha"` {
		t.Errorf("a page of the same context sees %s", got)
	}
	for _, id := range []int{b1, plain} {
		if got := read(id); got != `"|null"` {
			t.Errorf("page %d of another context sees %s", id, got)
		}
	}
	list := e.ok(t, "list_pages", nil)
	mustContain(t, list, fmt.Sprintf("%d: ", plain))
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, fmt.Sprintf("%d: ", plain)) && strings.Contains(line, "isolatedContext") {
			t.Errorf("a page of the default context is listed with one: %s", line)
		}
	}

	// Closing every page of a context disposes of it: the name starts clean.
	e.ok(t, "close_page", map[string]any{"pageId": a1})
	if got := read(a2); got != `"who=alpha|alpha"` {
		t.Errorf("the context lost its data while a page was left: %s", got)
	}
	e.ok(t, "close_page", map[string]any{"pageId": a2})
	if got := read(open("alpha")); got != `"|null"` {
		t.Errorf("a new page of a disposed context sees %s", got)
	}

	// Two new_page calls at once for a new name share one context.
	var ids []int
	calls := []<-chan outcome{
		e.async(t.Context(), "new_page", map[string]any{"url": testSite.URL + "/page2.html?g=1", "isolatedContext": "gamma"}),
		e.async(t.Context(), "new_page", map[string]any{"url": testSite.URL + "/page2.html?g=2", "isolatedContext": "gamma"}),
	}
	for i, ch := range calls {
		text := must(t, <-ch).text
		m := regexp.MustCompile(fmt.Sprintf(`(?m)^(\d+): .*\?g=%d\).* isolatedContext=gamma$`, i+1)).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("new_page in gamma:\n%s", text)
		}
		n, _ := strconv.Atoi(m[1])
		ids = append(ids, n)
	}
	e.eval(t, ids[0], "() => { document.cookie = 'who=gamma; path=/'; return 1 }")
	if got := e.eval(t, ids[1], "() => document.cookie"); got != `"who=gamma"` {
		t.Errorf("pages opened at once in one context see %s", got)
	}
}
