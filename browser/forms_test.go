package browser

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// formsSite serves the repository's testdata pages.
func formsSite(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir("../testdata")))
	t.Cleanup(srv.Close)
	return srv.URL
}

// openAt opens a page on url and returns it with its snapshot text.
func openAt(t *testing.T, b *Browser, url string, opts ...PageOption) (*Page, string) {
	t.Helper()
	p, err := b.NewPage(t.Context(), true, opts...)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, p)
	if err := p.Navigate(t.Context(), url, 0); err != nil {
		t.Fatal(err)
	}
	snap, err := p.Snapshot(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	return p, snap.Text
}

// uidOf returns the uid of the first snapshot line that holds needle.
func uidOf(t *testing.T, snap, needle string) string {
	t.Helper()
	for _, line := range strings.Split(snap, "\n") {
		if strings.Contains(line, needle) {
			uid, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			return strings.TrimPrefix(uid, "uid=")
		}
	}
	t.Fatalf("no %q in:\n%s", needle, snap)
	return ""
}

func evalString(t *testing.T, p *Page, fn string) string {
	t.Helper()
	v, err := p.Evaluate(t.Context(), fn, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func TestFillFormStopsAtDialog(t *testing.T) {
	t.Parallel()
	b := sharedBrowser(t)
	p, snap := openAt(t, b, formsSite(t)+"/fillform.html")
	user, trap, after := uidOf(t, snap, `textbox "User"`), uidOf(t, snap, `textbox "Trap"`), uidOf(t, snap, `textbox "After"`)

	err := p.Input().FillForm(t.Context(), []FormField{{user, "ada"}, {trap, "x"}, {after, "never"}})
	var fd *FormDialogError
	if !errors.As(err, &fd) || fd.UID != trap || fd.Remaining != 1 {
		t.Fatalf("FillForm = %v, want the dialog of %s with 1 remaining", err, trap)
	}
	var opened *DialogOpenedError
	if !errors.As(err, &opened) {
		t.Fatalf("a FormDialogError does not unwrap to a DialogOpenedError: %v", err)
	}
	if _, err := p.HandleDialog(t.Context(), true, ""); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, p, "() => [user.value, after.value].join('|')"); got != `"ada|"` {
		t.Fatalf("values after the dialog: %s", got)
	}
}

func TestDragKinds(t *testing.T) {
	t.Parallel()
	b := sharedBrowser(t)
	p, snap := openAt(t, b, formsSite(t)+"/drag.html")
	tests := []struct{ from, to, want string }{
		{`button "Card"`, `region "Drop zone"`, `"dropped card-1"`},
		{`button "Box"`, `region "Mouse target"`, `"mouse dropped after moves"`},
	}
	for _, tt := range tests {
		if err := p.Input().Drag(t.Context(), uidOf(t, snap, tt.from), uidOf(t, snap, tt.to)); err != nil {
			t.Fatalf("drag %s to %s: %v", tt.from, tt.to, err)
		}
		if got := evalString(t, p, "() => out.textContent"); got != tt.want {
			t.Errorf("drag %s to %s: page says %s, want %s", tt.from, tt.to, got, tt.want)
		}
	}
	// Two elements that cannot share the viewport.
	evalString(t, p, "() => { zone.style.display = 'block'; zone.style.marginTop = '5000px'; return 1 }")
	err := p.Input().Drag(t.Context(), uidOf(t, snap, `button "Card"`), uidOf(t, snap, `region "Drop zone"`))
	if err == nil || !strings.Contains(err.Error(), "do not fit in the viewport") {
		t.Fatalf("drag across more than a viewport: %v", err)
	}
}

func TestUploadFileWays(t *testing.T) {
	t.Parallel()
	b := sharedBrowser(t)
	p, snap := openAt(t, b, formsSite(t)+"/upload.html")
	file := filepath.Join(t.TempDir(), "f.txt")
	os.WriteFile(file, []byte("data"), 0o644)
	for _, tt := range []struct{ uid, want string }{
		{uidOf(t, snap, "Single file"), "single: f.txt=data"},
		{uidOf(t, snap, `button "Choose file"`), "hidden: f.txt=data"},
	} {
		if err := p.Input().UploadFile(t.Context(), tt.uid, []string{file}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.WaitForText(t.Context(), []string{tt.want}, 5*time.Second); err != nil {
			t.Fatalf("after upload through %s: %v", tt.uid, err)
		}
	}
}

// browserContexts returns the ids of Chrome's browser contexts, the default
// one aside.
func browserContexts(t *testing.T, b *Browser) []string {
	t.Helper()
	b.mu.Lock()
	l := b.members[0].launch
	b.mu.Unlock()
	res, err := chromedp.CallBrowser(l.rootCtx, target.GetBrowserContexts, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, id := range res.BrowserContextIDs {
		if id != res.DefaultBrowserContextID {
			ids = append(ids, string(id))
		}
	}
	return ids
}

func TestIsolatedContextLifetime(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	site := formsSite(t)
	a1, _ := openAt(t, b, site+"/page2.html", InContext("a"))
	a2, _ := openAt(t, b, site+"/page2.html", InContext("a"))
	plain, _ := openAt(t, b, site+"/page2.html")
	if a1.IsolatedContext() != "a" || a2.IsolatedContext() != "a" || plain.IsolatedContext() != "" {
		t.Fatalf("contexts: %q %q %q", a1.IsolatedContext(), a2.IsolatedContext(), plain.IsolatedContext())
	}
	// A popup of an isolated page belongs to its context.
	before := len(b.Pages())
	evalString(t, a1, "() => { window.open('about:blank#popup'); return 1 }")
	var popup *Page
	for deadline := time.Now().Add(10 * time.Second); popup == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ps := b.Pages(); len(ps) > before {
			popup = ps[len(ps)-1]
		}
	}
	if popup == nil || popup.IsolatedContext() != "a" {
		t.Fatalf("popup of an isolated page: %v", popup)
	}
	if n := len(browserContexts(t, b)); n != 1 {
		t.Fatalf("%d browser contexts for one name", n)
	}
	for _, p := range []*Page{a1, a2, popup} {
		if err := b.ClosePage(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	if ids := browserContexts(t, b); len(ids) != 0 {
		t.Fatalf("the context outlived its pages: %v", ids)
	}
	// What Close does before it ends Chrome.
	openAt(t, b, site+"/page2.html", InContext("b"))
	b.contexts.closeAll()
	if ids := browserContexts(t, b); len(ids) != 0 {
		t.Fatalf("contexts left by closeAll: %v", ids)
	}
}
