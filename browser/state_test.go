package browser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
)

// TestPresetState: the cookies and init script PresetState gives before
// the first Start reach the default context's first page and the pages
// opened later in it, before the page's own scripts, and not a page of a
// named context. One Chrome of the test's own, as it is set browser-wide.
func TestPresetState(t *testing.T) {
	t.Parallel()
	needChrome(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := "none"
		if c, err := r.Cookie("session"); err == nil {
			session = c.Value
		}
		// The first script reads localStorage before anything else runs.
		fmt.Fprintf(w, `<!doctype html><title>%s</title><script>window.token = localStorage.getItem("token");</script>`, session)
	}))
	defer site.Close()
	b := New(Config{})
	t.Cleanup(func() { b.Close() })
	b.PresetState([]*network.CookieParam{{Name: "session", Value: "s3ss10n", URL: site.URL, HTTPOnly: true}},
		`if (location.origin === `+fmt.Sprintf("%q", site.URL)+`) localStorage.setItem("token", "t0k3n");`)

	first, err := b.Selected(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	later, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	apart, err := b.NewPage(t.Context(), true, InContext("apart"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		p    *Page
		want string
	}{
		{"the first page", first, `"s3ss10n t0k3n"`},
		{"a later page", later, `"s3ss10n t0k3n"`},
		{"a page of a named context", apart, `"none null"`},
	} {
		if err := tt.p.Navigate(t.Context(), site.URL+"/", time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := evalString(t, tt.p, "() => document.title + ' ' + window.token"); got != tt.want {
			t.Errorf("%s: the server saw and the first script read %s, want %s", tt.name, got, tt.want)
		}
	}
}
