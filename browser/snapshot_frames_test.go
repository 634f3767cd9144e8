package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/policy"
	"github.com/pagemux/pagemux/snapshot"
)

// framePages are the pages of the frame tests, the same that
// chrome-devtools-mcp 1.11 was given for wantFrames: a main page on one
// site (127.0.0.1) with a same-origin frame and a frame of another site
// (localhost), which Chrome runs in a process of its own.
var framePages = map[string]string{
	"/main.html": `<!doctype html><html><head><title>Main</title></head><body>
<h1>Main page</h1>
<button>Top button</button>
<iframe id="same" src="same.html" title="same frame"></iframe>
<iframe id="cross" src="CROSS/form.html" title="cross frame"></iframe>
<p>After frames</p>
</body></html>`,
	"/same.html": `<!doctype html><html><head><title>Same</title></head><body><p>Same origin text</p><a href="#x">Same link</a></body></html>`,
	"/form.html": `<!doctype html><html><head><title>Form</title></head><body>
<form><label>Name <input id="name" type="text"></label>
<button type="button" id="go" onclick="document.getElementById('out').textContent='clicked'">Go</button>
<p id="out">waiting</p></form></body></html>`,
	"/nested.html": `<!doctype html><html><head><title>Nested</title></head><body>
<h1>Outer</h1>
<iframe src="CROSS/middle.html"></iframe>
</body></html>`,
	"/middle.html": `<!doctype html><html><head><title>Middle</title></head><body>
<p>Middle text</p>
<iframe src="TOP/same.html"></iframe>
<iframe src="form.html"></iframe>
</body></html>`,
	"/misc.html": `<!doctype html><html><head><title>Misc</title></head><body>
<h1>Misc</h1>
<iframe id="nosrc"></iframe>
<iframe id="blank" src="about:blank"></iframe>
<iframe id="srcdoc" srcdoc="<p>From srcdoc</p><button>Srcdoc button</button>"></iframe>
<iframe id="hidden" src="same.html" style="display:none"></iframe>
<iframe id="vhidden" src="same.html" style="visibility:hidden"></iframe>
<iframe id="err" src="http://127.0.0.1:1/nothing"></iframe>
<iframe id="ariahidden" src="same.html" aria-hidden="true"></iframe>
<iframe id="written"></iframe>
<script>document.getElementById('written').contentDocument.body.innerHTML = '<button>Written button</button>';</script>
</body></html>`,
	// Not shown to chrome-devtools-mcp: a frame to act in.
	"/act.html": `<!doctype html><html><head><title>Act</title><style>#go { color: rgb(1, 2, 3); background: rgb(255, 0, 0); border: 0; padding: 10px }</style></head><body>
<div style="height: 150px"></div>
<label>Name <input id="name" type="text"></label>
<button type="button" id="go" onclick="out.textContent='clicked'" onmouseover="out.textContent='hovered'">Go</button>
<input type="file" aria-label="Upload" onchange="out.textContent='file '+this.files[0].name">
<button onclick="document.getElementById('hiddenfile').click()">Choose</button>
<input type="file" id="hiddenfile" style="display: none" onchange="out.textContent='chose '+this.files[0].name">
<button onmousedown="window.held = true">Drag me</button>
<button onmouseup="if (window.held) out.textContent = 'dropped'">Drop here</button>
<a href="form.html">Elsewhere</a>
<p id="out">waiting</p></body></html>`,
	"/actmain.html": `<!doctype html><html><head><title>Act main</title></head><body>
<h1>Top</h1><div style="height: 120px"></div>
<iframe title="cross frame" src="CROSS/act.html" style="width: 500px; height: 400px; border: 7px solid"></iframe>
</body></html>`,
}

// wantFrames is what chrome-devtools-mcp 1.11 showed for main.html,
// nested.html and misc.html (served at 127.0.0.1:8801 and localhost:8802,
// here TOP and CROSS), each the first snapshot of its page.
var wantFrames = map[string]string{
	"/main.html": `uid=1_0 RootWebArea "Main" url="TOP/main.html"
  uid=1_1 heading "Main page" level="1"
  uid=1_2 button "Top button"
  uid=1_3 Iframe "same frame"
    uid=1_4 RootWebArea "Same" url="TOP/same.html"
      uid=1_5 "Same origin text"
      uid=1_6 link "Same link" url="TOP/same.html#x"
  uid=1_8 Iframe "cross frame"
    uid=1_9 RootWebArea "Form" url="CROSS/form.html"
      uid=1_10 form
        uid=1_11 "Name "
        uid=1_12 textbox "Name"
        uid=1_13 button "Go"
        uid=1_14 "waiting"
  uid=1_15 "After frames"
`,
	"/nested.html": `uid=1_0 RootWebArea "Nested" url="TOP/nested.html"
  uid=1_1 heading "Outer" level="1"
  uid=1_2 Iframe
    uid=1_3 RootWebArea "Middle" url="CROSS/middle.html"
      uid=1_4 "Middle text"
      uid=1_5 Iframe
        uid=1_6 RootWebArea "Same" url="TOP/same.html"
          uid=1_7 "Same origin text"
          uid=1_8 link "Same link" url="TOP/same.html#x"
      uid=1_10 Iframe
        uid=1_11 RootWebArea "Form" url="CROSS/form.html"
          uid=1_12 form
            uid=1_13 "Name "
            uid=1_14 textbox "Name"
            uid=1_15 button "Go"
            uid=1_16 "waiting"
`,
	"/misc.html": `uid=1_0 RootWebArea "Misc" url="TOP/misc.html"
  uid=1_1 heading "Misc" level="1"
  uid=1_2 Iframe
    uid=1_3 RootWebArea url="about:blank"
  uid=1_4 Iframe
    uid=1_5 RootWebArea url="about:blank"
  uid=1_6 Iframe
    uid=1_7 RootWebArea url="about:srcdoc"
      uid=1_8 "From srcdoc"
      uid=1_9 button "Srcdoc button"
  uid=1_10 Iframe
    uid=1_11 RootWebArea "127.0.0.1" url="chrome-error://chromewebdata/"
      uid=1_12 "The webpage at "
      uid=1_13 "http://127.0.0.1:1/nothing"
      uid=1_14 " might be temporarily down or it may have moved permanently to a new web address."
  uid=1_15 Iframe
    uid=1_16 RootWebArea url="about:blank"
      uid=1_17 button "Written button"
`,
}

// pageSourceGaps drops from a snapshot's text what the page's script still
// shows unlike Chrome (issue 38): lone " " lines, and with them the uids
// they shift. The frames' part is exact either way.
// TODO: compare the page source's text whole once page.js leaves them out.
func pageSourceGaps(text string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		rest := strings.TrimLeft(line, " ")
		_, rest, _ = strings.Cut(rest, " ")
		if rest == "\" \"\n" {
			continue
		}
		b.WriteString(strings.Repeat(" ", len(line)-len(strings.TrimLeft(line, " "))))
		b.WriteString(rest)
	}
	return b.String()
}

// twoSites serves framePages on two sites: top on 127.0.0.1, cross reached
// as localhost, in which TOP and CROSS stand for them.
func twoSites(t *testing.T) (top, cross string) {
	t.Helper()
	serve := func() *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			page, ok := framePages[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, strings.NewReplacer("TOP", top, "CROSS", cross).Replace(page))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	a, b := serve(), serve()
	top, cross = a.URL, strings.Replace(b.URL, "127.0.0.1", "localhost", 1)
	return top, cross
}

// snapshotUntil takes snapshots of p from source until one holds want.
func snapshotUntil(t *testing.T, p *Page, source, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		snap, err := p.SnapshotFrom(ctx, false, source)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(snap.Text, want) {
			return snap.Text
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %q in the snapshot:\n%s", want, snap.Text)
		case <-time.After(20 * time.Millisecond): // frames load after the page
		}
	}
}

// openSites opens path of twoSites on a page of b.
func openSites(t *testing.T, b *Browser, path string) (p *Page, top, cross string) {
	t.Helper()
	top, cross = twoSites(t)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, p)
	if err := p.Navigate(t.Context(), top+path, 0); err != nil {
		t.Fatal(err)
	}
	return p, top, cross
}

// assertOOPIF fails unless Chrome runs a frame of url in a process of its
// own, as a target of the type "iframe".
func assertOOPIF(t *testing.T, p *Page, url string) {
	t.Helper()
	ctx, cancel := p.Context(t.Context())
	defer cancel()
	infos, err := chromedp.Targets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Type == "iframe" && strings.HasPrefix(info.URL, url) {
			return
		}
	}
	t.Fatalf("no iframe target for %s: the frame is not out of process", url)
}

// The frames' documents show under their Iframe nodes as
// chrome-devtools-mcp shows them, same-origin, cross-site and nested, from
// both sources.
func TestSnapshotFramesAsCDM(t *testing.T) {
	t.Parallel()
	b := fullBrowser(t)
	loaded := map[string]string{"/main.html": `button "Go"`, "/nested.html": `button "Go"`, "/misc.html": "might be temporarily down"}
	for _, path := range []string{"/main.html", "/nested.html", "/misc.html"} {
		for _, source := range []string{SourceChrome, SourcePage} {
			t.Run(source+path, func(t *testing.T) {
				t.Parallel()
				p, top, cross := openSites(t, b, path)
				got := snapshotUntil(t, p, source, loaded[path])
				if path != "/misc.html" {
					assertOOPIF(t, p, cross)
				}
				got = strings.NewReplacer(top, "TOP", cross, "CROSS").Replace(got)
				want := wantFrames[path]
				if source == SourcePage {
					got, want = pageSourceGaps(got), pageSourceGaps(want)
				}
				if got != want {
					t.Errorf("got:\n%s\nwant (chrome-devtools-mcp's):\n%s\nfirst difference:\n%s", got, want, firstDiff(got, want))
				}
			})
		}
	}
}

// The uids of an out-of-process frame act in it: click, fill, hover,
// upload, drag, get_css_styles, an element's screenshot and a script given
// the element (run in the frame); once the frame navigated or went away, they
// fail with the take-a-new-snapshot error.
func TestSnapshotFramesActions(t *testing.T) {
	t.Parallel()
	b := fullBrowser(t)
	for _, source := range []string{SourceChrome, SourcePage} {
		t.Run(source, func(t *testing.T) {
			t.Parallel()
			p, _, cross := openSites(t, b, "/actmain.html")
			snap := snapshotUntil(t, p, source, `button "Go"`)
			assertOOPIF(t, p, cross)
			ctx := t.Context()
			if err := p.Input().Hover(ctx, uidOf(t, snap, `button "Go"`)); err != nil {
				t.Fatal(err)
			}
			snapshotUntil(t, p, source, `"hovered"`)
			if err := p.Input().Click(ctx, uidOf(t, snap, `button "Go"`), false); err != nil {
				t.Fatal(err)
			}
			snapshotUntil(t, p, source, `"clicked"`)
			if err := p.Input().Fill(ctx, uidOf(t, snap, `textbox "Name"`), "Ada"); err != nil {
				t.Fatal(err)
			}
			snapshotUntil(t, p, source, `value="Ada"`)
			st, err := p.CSSStyles(ctx, uidOf(t, snap, `button "Go"`))
			if err != nil {
				t.Fatal(err)
			}
			if s := fmt.Sprint(st.Element, st.Rules); !strings.Contains(st.Element, "button#go") || len(st.Rules) == 0 {
				t.Errorf("the frame's button's styles: %s", s)
			}
			if err := p.Input().UploadFile(ctx, uidOf(t, snap, `button "Upload"`), []string{"/etc/hostname"}); err != nil {
				t.Fatal(err)
			}
			snapshotUntil(t, p, source, `"file hostname"`)
			if err := p.Input().UploadFile(ctx, uidOf(t, snap, `button "Choose"`), []string{"/etc/hostname"}); err != nil {
				t.Fatal(err)
			}
			snapshotUntil(t, p, source, `"chose hostname"`)
			if err := p.Input().Drag(ctx, uidOf(t, snap, `button "Drag me"`), uidOf(t, snap, `button "Drop here"`)); err != nil {
				t.Fatal(err)
			}
			snapshotUntil(t, p, source, `"dropped"`)
			assertRed(t, p, uidOf(t, snap, `button "Go"`))
			if v, err := p.Evaluate(ctx, `(el) => el.id + " in " + location.hostname`, nil, uidOf(t, snap, `button "Go"`)); err != nil || string(v) != `"go in localhost"` {
				t.Errorf("evaluate_script on the frame's button: %s, %v", v, err)
			}

			// The frame navigates: the old document's uids are void.
			old := uidOf(t, snap, `textbox "Name"`)
			if err := p.Input().Click(ctx, uidOf(t, snap, `link "Elsewhere"`), false); err != nil {
				t.Fatal(err)
			}
			snap = snapshotUntil(t, p, source, `RootWebArea "Form"`)
			if err := p.Input().Fill(ctx, old, "Bob"); !errors.Is(err, snapshot.ErrUnknownUID) || !strings.Contains(fmt.Sprint(err), "take a new snapshot") {
				t.Errorf("filling a uid of the frame's old document: %v, want the take-a-new-snapshot error", err)
			}
			// The frame goes away: so do its uids.
			inFrame := uidOf(t, snap, `button "Go"`)
			if _, err := p.Evaluate(ctx, `() => document.querySelector("iframe").remove()`, nil); err != nil {
				t.Fatal(err)
			}
			if err := p.Input().Click(ctx, inFrame, false); !errors.Is(err, snapshot.ErrUnknownUID) {
				t.Errorf("clicking a uid of a frame that went away: %v, want the take-a-new-snapshot error", err)
			}
		})
	}
}

// assertRed fails unless a screenshot of the element of uid is red at its
// corners, as the frame's button is: the clip is where the element is.
func assertRed(t *testing.T, p *Page, uid string) {
	t.Helper()
	shot, err := p.Capture().Screenshot(t.Context(), ScreenshotOptions{UID: uid})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	for _, at := range [][2]int{{3, 3}, {b.Dx() - 4, b.Dy() - 4}} { // its padding, not its text
		if r, g, bl, _ := img.At(b.Min.X+at[0], b.Min.Y+at[1]).RGBA(); r>>8 < 200 || g>>8 > 60 || bl>>8 > 60 {
			t.Errorf("the screenshot of the frame's button is %dx%d and not red at %v: rgb(%d, %d, %d)", b.Dx(), b.Dy(), at, r>>8, g>>8, bl>>8)
		}
	}
}

// A frame on a URL the policy refuses is never read: its Iframe stays
// empty.
func TestSnapshotFramesRefused(t *testing.T) {
	t.Parallel()
	b, w := guardedBrowser(t, Config{}, policy.Options{Blocked: []string{"http://localhost:*/form.html"}})
	p, _, _ := openSites(t, b, "/main.html")
	w.waitRefused(t, "/form.html")
	for _, source := range []string{SourceChrome, SourcePage} {
		snap := snapshotUntil(t, p, source, `"Same origin text"`)
		if !strings.Contains(snap, `Iframe "cross frame"
  uid=`) || strings.Contains(snap, "Form") {
			t.Errorf("%s: the refused frame was read:\n%s", source, snap)
		}
	}
}

// Leaving an OOPIF that a snapshot no longer shows detaches from it and
// leaves the tab open: closing a frame's target would close its tab.
func TestSnapshotFramesDetachKeepsTab(t *testing.T) {
	t.Parallel()
	p, _, _ := openSites(t, fullBrowser(t), "/actmain.html")
	snapshotUntil(t, p, SourceChrome, `button "Go"`)
	if _, err := p.Evaluate(t.Context(), `() => { document.querySelector("iframe").style.display = "none"; }`, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := p.SnapshotFrom(t.Context(), false, SourceChrome)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(snap.Text, "Act") && strings.Contains(snap.Text, `button "Go"`) {
		t.Fatalf("the hidden frame still shows:\n%s", snap.Text)
	}
	if _, err := p.Evaluate(t.Context(), `() => document.title`, nil); err != nil || p.Closed() {
		t.Fatalf("the tab after its frame was left: %v (closed: %v)", err, p.Closed())
	}
}

// A same-origin frame that navigates makes the uids of its old document
// fail with the take-a-new-snapshot error, from either source.
func TestSnapshotFramesLocalNavigation(t *testing.T) {
	t.Parallel()
	b := sharedBrowser(t)
	for _, source := range []string{SourceChrome, SourcePage} {
		t.Run(source, func(t *testing.T) {
			t.Parallel()
			p, _, _ := openSites(t, b, "/main.html")
			old := uidOf(t, snapshotUntil(t, p, source, `link "Same link"`), `link "Same link"`)
			if _, err := p.Evaluate(t.Context(), `() => { document.getElementById("same").src = "act.html"; }`, nil); err != nil {
				t.Fatal(err)
			}
			snapshotUntil(t, p, source, `button "Drag me"`)
			if err := p.Input().Click(t.Context(), old, false); !errors.Is(err, snapshot.ErrUnknownUID) || !strings.Contains(fmt.Sprint(err), "take a new snapshot") {
				t.Errorf("clicking a uid of the frame's old document: %v, want the take-a-new-snapshot error", err)
			}
		})
	}
}
