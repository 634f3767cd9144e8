package browser

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// NetworkPreset is one of DevTools' network throttling profiles.
type NetworkPreset struct {
	Name     string
	Offline  bool
	Latency  float64 // added latency of each request, in ms
	Download float64 // bytes per second
	Upload   float64 // bytes per second
	// Slowdown is how many times longer the waits of a page so throttled
	// may take.
	Slowdown float64
}

// kbps is a throughput in kbit/s as bytes per second.
func kbps(k float64) float64 { return k * 1000 / 8 }

// networkPresets are the throttling profiles of DevTools and Puppeteer, in
// the order of chrome-devtools-mcp's enum. Each is a nominal link speed times
// the factor DevTools applies to it. Puppeteer gives "Slow 4G" the numbers of
// "Fast 3G"; they are kept so, to measure as chrome-devtools-mcp does.
var networkPresets = []NetworkPreset{
	{Name: "Offline", Offline: true, Slowdown: 1},
	{Name: "Slow 3G", Latency: 400 * 5, Download: kbps(500) * 0.8, Upload: kbps(500) * 0.8, Slowdown: 10},
	{Name: "Fast 3G", Latency: 150 * 3.75, Download: kbps(1600) * 0.9, Upload: kbps(750) * 0.9, Slowdown: 5},
	{Name: "Slow 4G", Latency: 150 * 3.75, Download: kbps(1600) * 0.9, Upload: kbps(750) * 0.9, Slowdown: 2.5},
	{Name: "Fast 4G", Latency: 60 * 2.75, Download: kbps(9000) * 0.9, Upload: kbps(1500) * 0.9, Slowdown: 1},
}

// NetworkPresetNames returns the names of the network presets, in order.
func NetworkPresetNames() []string {
	names := make([]string, len(networkPresets))
	for i, n := range networkPresets {
		names[i] = n.Name
	}
	return names
}

// LookupNetworkPreset returns the preset of a name, matched exactly.
func LookupNetworkPreset(name string) (NetworkPreset, bool) {
	for _, n := range networkPresets {
		if n.Name == name {
			return n, true
		}
	}
	return NetworkPreset{}, false
}

// Geolocation is an emulated position in degrees.
type Geolocation struct {
	Latitude, Longitude float64
}

// Viewport is an emulated screen: its size in CSS pixels, its device pixel
// ratio (0 means not given, and 1 is used) and its kind.
type Viewport struct {
	Width, Height     int64
	DeviceScaleFactor float64
	Mobile            bool
	Touch             bool
	Landscape         bool
}

// Emulation is every override a page can carry. The zero value overrides
// nothing. It does not include the window size, which resize_page sets.
type Emulation struct {
	Network     string       // a preset name from NetworkPresetNames; "" for none
	CPURate     float64      // CPU slowdown factor; 0 or 1 for none
	Geolocation *Geolocation // nil for none
	UserAgent   string       // "" for none
	// CSS media features, "" for none: prefers-color-scheme,
	// forced-colors, prefers-contrast, prefers-reduced-motion.
	ColorScheme          string
	ForcedColors         string
	PrefersContrast      string
	PrefersReducedMotion string
	Viewport             *Viewport         // nil for none
	Headers              map[string]string // extra HTTP headers; empty for none
}

// Slowdown is how many times longer the waits of a page so emulated may
// take: the CPU rate times the network preset's factor.
func (e Emulation) Slowdown() float64 {
	f := max(e.CPURate, 1)
	if n, ok := LookupNetworkPreset(e.Network); ok {
		f *= n.Slowdown
	}
	return f
}

// clone copies e deeply enough that later changes to one do not show in
// the other.
func (e Emulation) clone() Emulation {
	if e.Geolocation != nil {
		g := *e.Geolocation
		e.Geolocation = &g
	}
	if e.Viewport != nil {
		v := *e.Viewport
		e.Viewport = &v
	}
	e.Headers = maps.Clone(e.Headers)
	return e
}

// emulationState is the part of a Page that emulate.go keeps.
type emulationState struct {
	mu  sync.Mutex
	cur Emulation
	// geoOrigin is the origin whose geolocation permission this page holds
	// in geoContext; "" when none.
	geoOrigin  string
	geoContext cdp.BrowserContextID
}

// Emulation returns the overrides in force on the page.
func (p *Page) Emulation() Emulation {
	p.emu.mu.Lock()
	defer p.emu.mu.Unlock()
	return p.emu.cur.clone()
}

func (p *Page) commitEmulation(fn func(e *Emulation)) {
	p.emu.mu.Lock()
	defer p.emu.mu.Unlock()
	fn(&p.emu.cur)
	p.SetSlowdown(p.emu.cur.Slowdown())
}

// Emulate makes want the page's overrides, replacing all the ones before:
// a zero field clears its override. The overrides are the page's own,
// sent on its session only; other pages keep theirs. The exception is the
// geolocation permission, which Chrome keeps per origin: see
// grantGeolocation. A change of the mobile or touch flags reloads the page,
// as the page reads them only when its document is made. Emulate also
// stretches the page's waits by want.Slowdown. It does not change the
// window size. When a step fails, the overrides set before it stay, and
// Emulation reports them.
func (p *Page) Emulate(ctx context.Context, want Emulation) error {
	if err := p.Ready(ctx); err != nil {
		return err
	}
	want = want.clone()
	have := p.Emulation()
	err := p.await(ctx, func(ctx context.Context) error {
		for _, step := range p.emulationSteps(want) {
			if err := step.apply(ctx); err != nil {
				return fmt.Errorf("emulate %s on page %d: %w", step.what, p.ID, err)
			}
			p.commitEmulation(step.commit)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if mobileOrTouch(have.Viewport) != mobileOrTouch(want.Viewport) && p.URL() != "about:blank" {
		if err := p.Reload(ctx, false, DefaultNavigationTimeout); err != nil {
			return fmt.Errorf("reload page %d for the new mobile and touch settings: %w", p.ID, err)
		}
	}
	return nil
}

func mobileOrTouch(v *Viewport) [2]bool {
	if v == nil {
		return [2]bool{}
	}
	return [2]bool{v.Mobile, v.Touch}
}

// emulationStep sends one override and records it.
type emulationStep struct {
	what   string
	apply  func(ctx context.Context) error
	commit func(e *Emulation)
}

func (p *Page) emulationSteps(want Emulation) []emulationStep {
	return []emulationStep{
		{"network conditions", func(ctx context.Context) error { return emulateNetwork(ctx, want.Network) },
			func(e *Emulation) { e.Network = want.Network }},
		{"CPU throttling", func(ctx context.Context) error {
			_, err := chromedp.Call(ctx, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: max(want.CPURate, 1)})
			return err
		}, func(e *Emulation) { e.CPURate = want.CPURate }},
		{"geolocation", func(ctx context.Context) error { return p.emulateGeolocation(ctx, want.Geolocation) },
			func(e *Emulation) { e.Geolocation = want.Geolocation }},
		{"user agent", func(ctx context.Context) error {
			// An empty user agent ends the override.
			_, err := chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: want.UserAgent})
			return err
		}, func(e *Emulation) { e.UserAgent = want.UserAgent }},
		{"media features", func(ctx context.Context) error {
			// Each call replaces every feature; an empty value ends one.
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{
				{Name: "prefers-color-scheme", Value: want.ColorScheme},
				{Name: "forced-colors", Value: want.ForcedColors},
				{Name: "prefers-contrast", Value: want.PrefersContrast},
				{Name: "prefers-reduced-motion", Value: want.PrefersReducedMotion},
			}})
			return err
		}, func(e *Emulation) {
			e.ColorScheme, e.ForcedColors = want.ColorScheme, want.ForcedColors
			e.PrefersContrast, e.PrefersReducedMotion = want.PrefersContrast, want.PrefersReducedMotion
		}},
		{"extra HTTP headers", func(ctx context.Context) error {
			h := network.Headers{}
			for k, v := range want.Headers {
				h[k] = v
			}
			_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h})
			return err
		}, func(e *Emulation) { e.Headers = want.Headers }},
		{"viewport", func(ctx context.Context) error { return emulateViewport(ctx, want.Viewport) },
			func(e *Emulation) { e.Viewport = want.Viewport }},
	}
}

// emulateNetwork throttles the page's requests and sets what navigator.onLine
// and navigator.connection say. The per-request rules replace the older
// Network.emulateNetworkConditions, which Chrome deprecates.
func emulateNetwork(ctx context.Context, preset string) error {
	n, ok := LookupNetworkPreset(preset)
	if !ok {
		// No throttling: an empty rule list ends the rules, and the state
		// below says online and unthrottled.
		n = NetworkPreset{Download: -1, Upload: -1}
	}
	if _, err := chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{
		Offline: n.Offline, Latency: n.Latency, DownloadThroughput: n.Download, UploadThroughput: n.Upload,
	}); err != nil {
		return err
	}
	var rules []*network.Conditions
	if ok {
		rules = append(rules, &network.Conditions{
			Offline: n.Offline, Latency: n.Latency, DownloadThroughput: n.Download, UploadThroughput: n.Upload,
		})
	}
	_, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: rules,
	})
	return err
}

// emulateViewport sets or clears the device metrics and touch emulation.
func emulateViewport(ctx context.Context, v *Viewport) error {
	if v == nil {
		if _, err := chromedp.Call(ctx, emulation.ClearDeviceMetricsOverride, struct{}{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{Enabled: false})
		return err
	}
	orientation := &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypePortraitPrimary, Angle: 0}
	if v.Landscape {
		orientation = &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypeLandscapePrimary, Angle: 90}
	}
	dpr := v.DeviceScaleFactor
	if dpr == 0 {
		dpr = 1
	}
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: v.Width, Height: v.Height, DeviceScaleFactor: dpr, Mobile: v.Mobile, ScreenOrientation: orientation,
	}); err != nil {
		return err
	}
	_, err := chromedp.Call(ctx, emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{Enabled: v.Touch})
	return err
}

// emulateGeolocation sets or clears the page's position, and grants or
// gives back the permission to read it.
func (p *Page) emulateGeolocation(ctx context.Context, g *Geolocation) error {
	if g == nil {
		if _, err := chromedp.Call(ctx, emulation.ClearGeolocationOverride, struct{}{}); err != nil {
			return err
		}
		return p.holdGeolocation(ctx, false)
	}
	if _, err := chromedp.Call(ctx, emulation.SetGeolocationOverride, emulation.SetGeolocationOverrideParams{
		Latitude: new(g.Latitude), Longitude: new(g.Longitude), Accuracy: new(1.0),
	}); err != nil {
		return err
	}
	return p.holdGeolocation(ctx, true)
}

// geoMu orders the grants and revocations of geolocation permissions, which
// pages of one origin share.
var geoMu sync.Mutex

// holdGeolocation grants the geolocation permission to the origin of the
// page's document when hold is set, and gives back what the page held
// otherwise. Chrome keeps permissions per origin, not per page, so while a
// page holds it, other pages of the same origin may ask for their position
// too: they get Chrome's own (none, in a headless Chrome), never the
// emulated one. The last page to give an origin back resets it to "prompt",
// which a headless Chrome denies. Pages on opaque origins such as
// about:blank hold nothing; they get it when they navigate (followOrigin).
func (p *Page) holdGeolocation(ctx context.Context, hold bool) error {
	geoMu.Lock()
	defer geoMu.Unlock()
	origin := ""
	if hold {
		origin = permissionOrigin(p.URL())
	}
	p.emu.mu.Lock()
	old, oldCtx := p.emu.geoOrigin, p.emu.geoContext
	p.emu.mu.Unlock()
	if origin == old {
		return nil
	}
	var bctx cdp.BrowserContextID
	if origin != "" {
		var err error
		if bctx, err = p.browserContext(ctx); err != nil {
			return err
		}
		if err := setGeoPermission(ctx, bctx, origin, browser.PermissionSettingGranted); err != nil {
			return err
		}
	}
	p.emu.mu.Lock()
	p.emu.geoOrigin, p.emu.geoContext = origin, bctx
	p.emu.mu.Unlock()
	if old != "" && !p.b.geoHeldLocked(oldCtx, old) {
		return setGeoPermission(ctx, oldCtx, old, browser.PermissionSettingPrompt)
	}
	return nil
}

// geoHeldLocked reports whether an open page holds the geolocation
// permission of an origin. The caller holds geoMu.
func (b *Browser) geoHeldLocked(bctx cdp.BrowserContextID, origin string) bool {
	return slices.ContainsFunc(b.Pages(), func(q *Page) bool {
		q.emu.mu.Lock()
		defer q.emu.mu.Unlock()
		return q.emu.geoOrigin == origin && q.emu.geoContext == bctx
	})
}

func setGeoPermission(ctx context.Context, bctx cdp.BrowserContextID, origin string, s browser.PermissionSetting) error {
	_, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "geolocation"}, Setting: s, Origin: origin,
		BrowserContextID: bctx,
	})
	if err != nil {
		return fmt.Errorf("set the geolocation permission of %s to %s: %w", origin, s, err)
	}
	return nil
}

// browserContext returns the id of the browser context the page lives in.
func (p *Page) browserContext(ctx context.Context) (cdp.BrowserContextID, error) {
	res, err := chromedp.CallBrowser(ctx, target.GetTargetInfo, target.GetTargetInfoParams{TargetID: p.TargetID})
	if err != nil {
		return "", err
	}
	return res.TargetInfo.BrowserContextID, nil
}

// permissionOrigin is the origin a permission can be granted to, or "" for
// a URL whose origin is opaque.
func permissionOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// emulationEvent follows the page's events for its emulation: a page that
// emulates its position and navigates to another origin takes the
// permission along. It runs in the event loop, so it sends nothing itself.
func (p *Page) emulationEvent(ev any) {
	nav, ok := ev.(*page.EventFrameNavigated)
	if !ok || nav.Frame.ParentID != "" {
		return
	}
	p.emu.mu.Lock()
	follow := p.emu.cur.Geolocation != nil && p.emu.geoOrigin != permissionOrigin(nav.Frame.URL)
	p.emu.mu.Unlock()
	if follow {
		// Racing the new document's scripts: one that asks for its position
		// at once may be denied.
		go p.followOrigin()
	}
}

// followOrigin moves the page's geolocation permission to its new origin.
func (p *Page) followOrigin() {
	ctx, cancel := p.Context(context.Background())
	defer cancel()
	if p.Emulation().Geolocation == nil {
		return
	}
	if err := p.holdGeolocation(ctx, true); err != nil && !p.Closed() {
		p.b.log.Warn("geolocation permission did not follow the page", "page", p.ID, "error", err)
	}
}

// releaseEmulation gives back what a closed page held beyond itself.
func (p *Page) releaseEmulation() {
	p.emu.mu.Lock()
	origin, bctx := p.emu.geoOrigin, p.emu.geoContext
	p.emu.mu.Unlock()
	if origin == "" || p.launch == nil || p.launch.gone() {
		return
	}
	geoMu.Lock()
	defer geoMu.Unlock()
	p.emu.mu.Lock()
	p.emu.geoOrigin = ""
	p.emu.mu.Unlock()
	if p.b.geoHeldLocked(bctx, origin) {
		return
	}
	ctx, cancel := context.WithTimeout(p.launch.rootCtx, startTimeout)
	defer cancel()
	_ = setGeoPermission(ctx, bctx, origin, browser.PermissionSettingPrompt)
}

// Resize sets the size of the page's content area, the window's inner size,
// in CSS pixels at zoom 1, and waits until the document sees it (or gives up
// after a second). Every page has a window of its own, so no other page
// changes size. An emulated viewport stays as it was: the page sees the new
// size once the emulation ends.
func (p *Page) Resize(ctx context.Context, width, height int64) error {
	if err := p.Ready(ctx); err != nil {
		return err
	}
	cctx, cancel := p.Context(ctx)
	defer cancel()
	win, err := chromedp.CallBrowser(cctx, browser.GetWindowForTarget, browser.GetWindowForTargetParams{TargetID: p.TargetID})
	if err != nil {
		return fmt.Errorf("find the window of page %d: %w", p.ID, p.explain(ctx, err))
	}
	if win.Bounds != nil && win.Bounds.WindowState != "" && win.Bounds.WindowState != browser.WindowStateNormal {
		if _, err := chromedp.CallBrowser(cctx, browser.SetWindowBounds, browser.SetWindowBoundsParams{
			WindowID: win.WindowID, Bounds: &browser.Bounds{WindowState: browser.WindowStateNormal},
		}); err != nil {
			return fmt.Errorf("restore the window of page %d: %w", p.ID, p.explain(ctx, err))
		}
	}
	if _, err := chromedp.CallBrowser(cctx, browser.SetContentsSize, browser.SetContentsSizeParams{
		WindowID: win.WindowID, Width: width, Height: height,
	}); err != nil {
		return fmt.Errorf("resize page %d: %w", p.ID, p.explain(ctx, err))
	}
	if p.Crashed() || p.Dialog() != nil || p.Emulation().Viewport != nil {
		return nil // nothing would answer, or the size stays emulated
	}
	// The renderer learns of the size by its own channel, after this answer:
	// wait for it, so that what the caller reads next has the new size.
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	defer wcancel()
	_ = p.await(wctx, func(ctx context.Context) error {
		_, err := p.callFunction(ctx, sizedJS, "", width, height, 1000)
		return err
	})
	return nil
}

// sizedJS resolves once the window's inner size is w×h, or after max ms.
const sizedJS = `(w, h, max) => new Promise(resolve => {
  const end = Date.now() + max;
  const check = () => (innerWidth === w && innerHeight === h) || Date.now() > end ? resolve(true) : setTimeout(check, 10);
  check();
})`
