package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/pagelock"
)

// echoHeaders answers the request's headers as a JSON object of lowercase
// names and first values.
func echoHeaders(w http.ResponseWriter, r *http.Request) {
	h := map[string]string{}
	for k, v := range r.Header {
		h[strings.ToLower(k)] = v[0]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(h)
}

// Scripts that read what each emulation changes.
const (
	uaJS       = `() => navigator.userAgent`
	darkJS     = `() => matchMedia("(prefers-color-scheme: dark)").matches`
	motionJS   = `() => matchMedia("(prefers-reduced-motion: reduce)").matches`
	viewportJS = `() => [innerWidth, innerHeight, devicePixelRatio, "ontouchstart" in window, screen.orientation.type]`
	geoJS      = `() => new Promise(r => navigator.geolocation.getCurrentPosition(
		p => r([p.coords.latitude, p.coords.longitude]), e => r("error " + e.code), {timeout: 3000}))`
	headerJS  = `() => fetch("/echo-headers").then(r => r.json()).then(h => h["x-pagemux-test"] || null)`
	offlineJS = `() => fetch("/api/data").then(() => "fetched", () => "failed").then(f => [navigator.onLine, f])`
)

// Each setting takes effect on the emulated page, shows in its answers, and
// ends when a later emulate call omits it; a second page open at the same
// time keeps its own settings throughout. The settings take their turns on
// one pair of pages, as each ends with the page as it was before (which the
// next one checks again): two pages, not two for each of seven settings.
func TestEmulateEachSetting(t *testing.T) {
	e := sharedEnv(t, pagelock.PerPage)
	a := e.openPage(t, "/form.html")
	b := e.openPage(t, "/form.html")
	tests := []struct {
		name   string
		args   map[string]any
		script string
		want   string   // the script's value on the emulated page; "" for no script
		lines  []string // the answer's Emulating lines
		// otherIsNot is set where the other page's value may change, but
		// never to the emulated one: pages of one origin share the
		// geolocation permission, not the position.
		otherIsNot bool
	}{
		{"userAgent", map[string]any{"userAgent": "pagemux-test/1.0"}, uaJS, `"pagemux-test/1.0"`,
			[]string{"Emulating user agent: pagemux-test/1.0"}, false},
		{"colorScheme", map[string]any{"colorScheme": "dark"}, darkJS, `true`,
			[]string{"Emulating color scheme: dark"}, false},
		{"prefersReducedMotion", map[string]any{"prefersReducedMotion": "reduce"}, motionJS, `true`,
			[]string{"Emulating prefers-reduced-motion: reduce"}, false},
		{"viewport", map[string]any{"viewport": "400x300x2,touch,landscape"}, viewportJS, `[400,300,2,true,"landscape-primary"]`,
			[]string{`Emulating viewport: {"deviceScaleFactor":2,"isMobile":false,"hasTouch":true,"isLandscape":true,"width":400,"height":300}`}, false},
		{"geolocation", map[string]any{"geolocation": "48.8584,2.2945"}, geoJS, `[48.8584,2.2945]`,
			[]string{"Emulating geolocation: latitude=48.8584, longitude=2.2945"}, true},
		{"offline", map[string]any{"networkConditions": "Offline"}, offlineJS, `[false,"failed"]`,
			[]string{"Emulating network conditions: Offline", "Default navigation timeout set to 30000 ms"}, false},
		{"cpuThrottlingRate", map[string]any{"cpuThrottlingRate": 4}, "", "",
			[]string{"Emulating CPU throttling: 4x slowdown"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := tt.script
			if script == "" {
				script = `() => "unchecked"`
			}
			before := e.eval(t, a, script)
			if tt.want != "" && before == tt.want {
				t.Fatalf("%s is already %s before emulating", tt.script, before)
			}
			args := map[string]any{"pageId": a}
			for k, v := range tt.args {
				args[k] = v
			}
			text := e.ok(t, "emulate", args)
			mustContain(t, text, append([]string{"Emulation configured successfully"}, tt.lines...)...)
			if got := e.eval(t, a, script); tt.want != "" && got != tt.want {
				t.Errorf("emulated page: %s = %s, want %s", script, got, tt.want)
			}
			switch got := e.eval(t, b, script); {
			case tt.otherIsNot && got == tt.want:
				t.Errorf("other page: %s = %s, the emulated value", script, got)
			case !tt.otherIsNot && got != before:
				t.Errorf("other page: %s = %s, want %s as before", script, got, before)
			}
			// The lines come back with every later answer about the page,
			// and never with one about the other page.
			mustContain(t, e.ok(t, "take_snapshot", map[string]any{"pageId": a}), tt.lines...)
			if other := e.ok(t, "take_snapshot", map[string]any{"pageId": b}); strings.Contains(other, "Emulating") {
				t.Errorf("the other page's answer shows emulation:\n%s", other)
			}
			// A call without the setting ends it.
			text = e.ok(t, "emulate", map[string]any{"pageId": a})
			if strings.Contains(text, "Emulating") {
				t.Errorf("emulation still reported after clearing:\n%s", text)
			}
			if got := e.eval(t, a, script); got != before {
				t.Errorf("after clearing: %s = %s, want %s as before", script, got, before)
			}
		})
	}
}

// Extra headers reach the server from the emulated page only, stay when a
// later call omits them, and end with an empty string.
func TestEmulateExtraHeaders(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	a := e.openPage(t, "/form.html")
	b := e.openPage(t, "/form.html")
	e.ok(t, "emulate", map[string]any{"pageId": a, "extraHttpHeaders": `{"X-Pagemux-Test": "yes"}`})
	if got := e.eval(t, a, headerJS); got != `"yes"` {
		t.Fatalf("emulated page sent x-pagemux-test %s, want \"yes\"", got)
	}
	if got := e.eval(t, b, headerJS); got != `null` {
		t.Fatalf("other page sent x-pagemux-test %s, want none", got)
	}
	e.ok(t, "emulate", map[string]any{"pageId": a, "colorScheme": "dark"})
	if got := e.eval(t, a, headerJS); got != `"yes"` {
		t.Fatalf("after a call without extraHttpHeaders: %s, want the header kept", got)
	}
	// The navigation request carries them too.
	e.ok(t, "navigate_page", map[string]any{"pageId": a, "url": testSite.URL + "/echo-headers"})
	if got := e.eval(t, a, `() => JSON.parse(document.body.innerText)["x-pagemux-test"]`); got != `"yes"` {
		t.Fatalf("navigation sent x-pagemux-test %s, want \"yes\"", got)
	}
	e.ok(t, "emulate", map[string]any{"pageId": a, "extraHttpHeaders": ""})
	if got := e.eval(t, a, headerJS); got != `null` {
		t.Fatalf("after clearing: x-pagemux-test %s, want none", got)
	}
}

// Throttling stretches the page's waits by the CPU rate times the network
// preset's factor, and only that page's.
func TestEmulateScalesTimeouts(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	a := e.openPage(t, "/form.html")
	b := e.openPage(t, "/form.html")
	pa, err := e.b.Page(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := e.b.Page(b)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args  map[string]any
		scale time.Duration // of one second
		line  string
	}{
		{map[string]any{"networkConditions": "Slow 3G"}, 10 * time.Second, "Default navigation timeout set to 300000 ms"},
		{map[string]any{"networkConditions": "Slow 4G", "cpuThrottlingRate": 2}, 5 * time.Second, "Default navigation timeout set to 150000 ms"},
		{map[string]any{"networkConditions": "Fast 4G"}, time.Second, "Default navigation timeout set to 30000 ms"},
		{map[string]any{"cpuThrottlingRate": 3}, 3 * time.Second, "Emulating CPU throttling: 3x slowdown"},
		{map[string]any{"networkConditions": "Slow 3G", "cpuThrottlingRate": 2}, 20 * time.Second, "Default navigation timeout set to 600000 ms"},
		{map[string]any{"networkConditions": "No emulation", "cpuThrottlingRate": 1}, time.Second, ""}, // older chrome-devtools-mcp's words
		{map[string]any{"networkConditions": "Fast 3G"}, 5 * time.Second, "Emulating network conditions: Fast 3G"},
		{map[string]any{}, time.Second, ""},
	}
	for _, tt := range tests {
		args := map[string]any{"pageId": a}
		for k, v := range tt.args {
			args[k] = v
		}
		text := e.ok(t, "emulate", args)
		mustContain(t, text, tt.line)
		if got := pa.Scale(time.Second); got != tt.scale {
			t.Errorf("emulate %v: the page's waits scale 1s to %v, want %v", tt.args, got, tt.scale)
		}
		if got := pb.Scale(time.Second); got != time.Second {
			t.Errorf("emulate %v on page %d: page %d's waits scale 1s to %v", tt.args, a, b, got)
		}
	}
}

// Two pages emulate at once, each its own settings, in both lock modes.
func TestEmulateTwoPagesAtOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			e := sharedEnv(t, mode)
			pages := []int{e.openPage(t, "/form.html"), e.openPage(t, "/page2.html")}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var calls []<-chan outcome
			for i, id := range pages {
				calls = append(calls, e.async(ctx, "emulate", map[string]any{
					"pageId": id, "userAgent": []string{"agent-a", "agent-b"}[i], "viewport": []string{"500x400", "600x450x1.5"}[i],
				}))
			}
			for _, ch := range calls {
				if r := must(t, <-ch); r.isError {
					t.Fatalf("emulate failed: %s", r.text)
				}
			}
			for i, id := range pages {
				want := []string{`["agent-a",500,400,1]`, `["agent-b",600,450,1.5]`}[i]
				if got := e.eval(t, id, `() => [navigator.userAgent, innerWidth, innerHeight, devicePixelRatio]`); got != want {
					t.Errorf("page %d: %s, want %s", id, got, want)
				}
			}
		})
	}
}

// Bad input is refused with the valid values, and changes nothing.
func TestEmulateBadInput(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	a := e.openPage(t, "/form.html")
	e.ok(t, "emulate", map[string]any{"pageId": a, "userAgent": "kept/1"})
	tests := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"networkConditions": "Slow 5G"}, []string{`"Slow 5G"`, `"Offline", "Slow 3G", "Fast 3G", "Slow 4G", "Fast 4G"`}},
		{map[string]any{"cpuThrottlingRate": -2}, []string{`invalid argument "cpuThrottlingRate" for emulate: want at least 1`, "got -2"}},
		{map[string]any{"cpuThrottlingRate": 50}, []string{"want at most 20", "got 50"}},
		{map[string]any{"viewport": "400by300"}, []string{`"400by300"`, "<width>x<height>x<devicePixelRatio>[,mobile][,touch][,landscape]"}},
		{map[string]any{"viewport": "400x300x0"}, []string{"devicePixelRatio"}},
		{map[string]any{"viewport": "-4x300"}, []string{"width"}},
		{map[string]any{"viewport": "400x300,tablet"}, []string{`"tablet"`, `"mobile", "touch", "landscape"`}},
		{map[string]any{"geolocation": "95,10"}, []string{`"95,10"`, "-90 to 90"}},
		{map[string]any{"geolocation": "north"}, []string{"<latitude>,<longitude>"}},
		{map[string]any{"colorScheme": "blue"}, []string{`"blue"`, `"dark", "light", "auto"`}},
		{map[string]any{"extraHttpHeaders": `["X-A"]`}, []string{"JSON object"}},
		{map[string]any{"extraHttpHeaders": `{"X-A": 1}`}, []string{`"X-A"`, "want a string"}},
	}
	for _, tt := range tests {
		args := map[string]any{"pageId": a}
		for k, v := range tt.args {
			args[k] = v
		}
		text := e.fails(t, "emulate", args)
		mustContain(t, text, tt.want...)
	}
	if got := e.eval(t, a, uaJS); got != `"kept/1"` {
		t.Fatalf("after refused calls the user agent is %s, want the one set before", got)
	}
	mustContain(t, e.ok(t, "take_snapshot", map[string]any{"pageId": a}), "Emulating user agent: kept/1")
}

// resize_page sets the content size of that page's window only, and
// answers with the page list.
func TestResizePage(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	a := e.openPage(t, "/form.html")
	b := e.openPage(t, "/form.html")
	const sizeJS = `() => [innerWidth, innerHeight, outerWidth]`
	before := e.eval(t, b, sizeJS)
	text := e.ok(t, "resize_page", map[string]any{"pageId": a, "width": 640, "height": 480})
	mustContain(t, text, "## Pages")
	if got := e.eval(t, a, `() => [innerWidth, innerHeight, outerWidth >= 640]`); got != `[640,480,true]` {
		t.Errorf("resized page: %s, want [640,480,true]", got)
	}
	if got := e.eval(t, b, sizeJS); got != before {
		t.Errorf("other page: %s, want %s as before", got, before)
	}
	e.ok(t, "resize_page", map[string]any{"pageId": a, "width": 1000, "height": 700})
	if got := e.eval(t, a, `() => [innerWidth, innerHeight]`); got != `[1000,700]` {
		t.Errorf("resized again: %s, want [1000,700]", got)
	}
	for _, bad := range []map[string]any{
		{"pageId": a, "width": 0, "height": 100},
		{"pageId": a, "width": 100, "height": -5},
	} {
		mustContain(t, e.fails(t, "resize_page", bad), "for resize_page: want more than 0, got ")
	}
	mustContain(t, e.fails(t, "resize_page", map[string]any{"pageId": a, "width": 100}), "height")
}

// The Emulating lines come after the tool's own lines and before the dialog
// and the page list, as in chrome-devtools-mcp; resize_page works while a
// dialog is open, emulate does not.
func TestEmulateAnswerOrder(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	a := e.openPage(t, "/form.html")
	e.ok(t, "emulate", map[string]any{"pageId": a, "userAgent": "order/1", "cpuThrottlingRate": 2})
	e.ok(t, "click", map[string]any{"pageId": a, "uid": e.uid(t, a, `button "Alert"`)})
	text := e.ok(t, "resize_page", map[string]any{"pageId": a, "width": 700, "height": 500})
	ua := strings.Index(text, "Emulating user agent: order/1\nEmulating CPU throttling: 2x slowdown")
	dlg := strings.Index(text, "# Open dialog\nalert: boom.")
	pages := strings.Index(text, "## Pages")
	if ua < 0 || dlg < ua || pages < dlg {
		t.Fatalf("want the emulation, then the dialog, then the pages:\n%s", text)
	}
	mustContain(t, e.fails(t, "emulate", map[string]any{"pageId": a}), "A dialog is open")
	e.ok(t, "handle_dialog", map[string]any{"pageId": a, "action": "accept"})
	if got := e.eval(t, a, `() => [innerWidth, innerHeight]`); got != `[700,500]` {
		t.Fatalf("size after the dialog: %s, want [700,500]", got)
	}
	mustContain(t, e.ok(t, "emulate", map[string]any{"pageId": a}), "Emulation configured successfully")
}
