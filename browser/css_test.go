package browser

import (
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/chromedp"
)

// The CSS domain stays on between calls and comes back when it went off,
// whether pagemux turned it off after the idle time or not; the session of
// a page ends with the page.
func TestCSSDomainOnAndOff(t *testing.T) {
	t.Parallel()
	b := sharedBrowser(t)
	p, snap := openAt(t, b, formsSite(t)+"/css.html")
	uid := uidOf(t, snap, "Card button")
	check := func(when string) {
		t.Helper()
		st, err := p.CSSStyles(t.Context(), uid)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if len(st.Rules) < 10 || st.Rules[1].Selector != "#target.card" || st.Rules[1].Source != "css-cascade.css:15" {
			t.Fatalf("%s: rules %+v", when, st.Rules[:min(2, len(st.Rules))])
		}
	}
	check("first call")
	check("second call")
	sess, err := cssSessionOf(p, nil)
	if err != nil || !sess.on {
		t.Fatalf("the domain is not on after a call: %v", err)
	}
	sess.turnOff()
	if sess.on {
		t.Fatal("turnOff left the domain on")
	}
	check("after the idle time")
	// Off behind pagemux's back.
	ctx, cancel := p.Context(t.Context())
	if _, err := chromedp.Call(ctx, css.Disable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	check("after the domain went off by itself")
	if err := b.ClosePage(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cssSessions.Lock()
		left := cssSessions.of[p] != nil
		cssSessions.Unlock()
		if !left {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the CSS session outlived its page")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
