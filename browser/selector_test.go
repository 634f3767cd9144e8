package browser

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Actions by CSS selector: they wait for a rendered match (one that comes
// after a click, too), say whether nothing matched, the match is hidden or
// the selector is not one; a fill types into the field; a URL wait sees a
// history.pushState, which fires no navigation.
func TestSelectorActions(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Selectors</title><main>
<button id="show">Show</button><button id="later" hidden>Later</button>
<div id="gone" style="display:none">gone</div><input id="q"><a id="push" href="#">push</a></main>
<script>
document.querySelector("#show").onclick = () => setTimeout(() => { document.querySelector("#later").hidden = false; }, 100);
document.querySelector("#push").onclick = e => { e.preventDefault(); setTimeout(() => history.pushState({}, "", "/pushed"), 100); };
</script></html>`)
	}))
	defer srv.Close()
	b := sharedBrowser(t) // its page is all it uses
	p, _ := openAt(t, b, srv.URL+"/")
	ctx := t.Context()

	for _, tt := range []struct{ sel, want string }{
		{"#nope", "#nope: no element matches it after 300ms"},
		{"#gone", "#gone: the element it matches is not rendered"},
		{"main[", "main[: not a valid CSS selector"},
	} {
		err := p.WaitForSelector(ctx, tt.sel, 300*time.Millisecond)
		var se *SelectorError
		if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("WaitForSelector(%s): %v, want %q", tt.sel, err, tt.want)
		}
	}
	if err := p.Input().ClickSelector(ctx, "#later", 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "not rendered") {
		t.Errorf("a click on a hidden element: %v", err)
	}
	if err := p.Input().ClickSelector(ctx, "#show", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitForSelector(ctx, "#later", 5*time.Second); err != nil {
		t.Errorf("the button the click shows: %v", err)
	}
	if err := p.Input().FillSelector(ctx, "#q", "hello", time.Second); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, p, `() => document.querySelector("#q").value`); got != `"hello"` {
		t.Errorf("the field holds %s after the fill", got)
	}
	if err := p.Input().ClickSelector(ctx, "#push", time.Second); err != nil {
		t.Fatal(err)
	}
	u, ok, err := p.WaitForURL(ctx, func(u string) bool { return strings.HasSuffix(u, "/pushed") }, 5*time.Second)
	if err != nil || !ok {
		t.Errorf("WaitForURL after pushState: %s, %v, %v", u, ok, err)
	}
	u, ok, err = p.WaitForURL(ctx, func(u string) bool { return strings.HasSuffix(u, "/never") }, 200*time.Millisecond)
	if err != nil || ok || !strings.HasSuffix(u, "/pushed") {
		t.Errorf("WaitForURL for a URL never reached: %s, %v, %v; want the URL it is at", u, ok, err)
	}
}
