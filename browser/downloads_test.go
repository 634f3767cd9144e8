package browser

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/internal/tmpcheck"
)

// downloadPage serves a page whose link downloads a file (Content-Disposition:
// attachment) named to lead out of its directory.
func downloadPage(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><a id=a href="/f">f</a>`)
	})
	mux.HandleFunc("/f", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="../escape.txt"`)
		fmt.Fprint(w, "body")
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// completedDownloads returns a func that waits until Chrome has told of n
// downloads completed in all (Browser.downloadProgress), since it was called.
func completedDownloads(t *testing.T, b *Browser) func(n int) {
	t.Helper()
	var done atomic.Int64
	changed := make(chan struct{}, 1)
	if err := chromedp.ListenBrowser(b.members[0].launch.rootCtx, func(ev any) {
		if ev, ok := ev.(*cdpbrowser.EventDownloadProgress); ok && ev.State == cdpbrowser.DownloadProgressStateCompleted {
			done.Add(1)
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	return func(n int) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for done.Load() < int64(n) {
			select {
			case <-changed:
			case <-timeout:
				t.Fatalf("Chrome told of %d completed downloads in 20 s, want %d", done.Load(), n)
			}
		}
	}
}

// download opens the page in p and clicks its link.
func download(t *testing.T, p *Page, url string) {
	t.Helper()
	if err := p.Navigate(t.Context(), url, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Evaluate(t.Context(), "() => { document.getElementById('a').click(); return 1 }", nil); err != nil {
		t.Fatal(err)
	}
}

// TestDownloadDirs: OnDownloads sends the default context's downloads to
// its directory at launch, and a named context's to its own when the
// context is made, asked with the call that made it; the name a page
// suggests does not lead out. SetDownloadDir changes a context later.
// Close removes the directories it made that stayed empty, and nothing else.
func TestDownloadDirs(t *testing.T) {
	site := downloadPage(t)
	root := t.TempDir()
	type key struct{}
	var mu sync.Mutex
	asked := map[string]any{}
	b := New(Config{})
	t.Cleanup(func() { b.Close() })
	b.OnDownloads(func(ctx context.Context, name string) string {
		mu.Lock()
		defer mu.Unlock()
		asked[name] = ctx.Value(key{})
		return filepath.Join(root, "ctx-"+name)
	})
	needChrome(t)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	completed := completedDownloads(t, b)
	download(t, p, site.URL)
	tmpcheck.WaitFile(t, filepath.Join(root, "ctx-", "*escape.txt"))

	ctx := context.WithValue(t.Context(), key{}, "the call")
	q, err := b.NewPage(ctx, true, InContext("alice"))
	if err != nil {
		t.Fatal(err)
	}
	download(t, q, site.URL)
	tmpcheck.WaitFile(t, filepath.Join(root, "ctx-alice", "*escape.txt"))
	mu.Lock()
	if asked["alice"] != "the call" {
		t.Errorf("the named context's rule was asked with %v, want the call's context", asked["alice"])
	}
	mu.Unlock()

	if _, err := b.NewPage(t.Context(), true, InContext("bob")); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(root, "kept") // there before: stays, empty
	if err := os.Mkdir(kept, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDownloadDir(t.Context(), "", kept); err != nil {
		t.Fatal(err)
	}
	later := filepath.Join(root, "later")
	if err := b.SetDownloadDir(t.Context(), "", later); err != nil {
		t.Fatal(err)
	}
	download(t, p, site.URL)
	tmpcheck.WaitFile(t, filepath.Join(later, "*escape.txt"))
	if fi, err := os.Stat(later); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the download directory: %v %v, want mode 0700", fi, err)
	}
	if m, _ := filepath.Glob(filepath.Join(root, "escape*")); len(m) > 0 {
		t.Errorf("a download left its directory: %v", m)
	}

	// A download whose file is there may not be done: Chrome removes an
	// unfinished one as it closes (seen under load).
	completed(3)
	b.Close()
	if _, err := os.Stat(filepath.Join(root, "ctx-bob")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the empty download directory pagemux made is still there after Close (%v)", err)
	}
	for _, dir := range []string{"ctx-", "ctx-alice", "later", "kept"} {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("Close removed %s, which holds a download or was there before: %v", dir, err)
		}
	}
}
