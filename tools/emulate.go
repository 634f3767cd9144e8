package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pagemux/pagemux/browser"
)

// emulationTools lists the tools of this group.
func (s *Server) emulationTools() []tool {
	return []tool{s.emulate(), s.resizePage()}
}

// The values the enumerated arguments of emulate take. "auto" ends an
// override, as omitting the argument does.
var (
	colorSchemes          = []string{"dark", "light", "auto"}
	forcedColorsValues    = []string{"active", "none", "auto"}
	prefersContrastValues = []string{"more", "less", "custom", "no-preference", "auto"}
	reducedMotionValues   = []string{"reduce", "no-preference", "auto"}
	viewportFlags         = []string{"mobile", "touch", "landscape"}
)

// noNetworkEmulation is the preset name older chrome-devtools-mcp versions
// took to end throttling; it is still understood, though no longer listed.
const noNetworkEmulation = "No emulation"

// CPU throttling rates emulate accepts, as chrome-devtools-mcp does.
const minCPURate, maxCPURate = 1, 20

const viewportFormat = "'<width>x<height>x<devicePixelRatio>[,mobile][,touch][,landscape]'"

// emulateArgs are chrome-devtools-mcp 1.11's emulate arguments; the
// descriptions are its own. An omitted argument is as an empty one, except
// extraHttpHeaders, which stay as they are when omitted.
type emulateArgs struct {
	pageArg
	NetworkConditions    string  `json:"networkConditions,omitempty" jsonschema_description:"Throttle network. Omit to disable throttling."`
	CPUThrottlingRate    float64 `json:"cpuThrottlingRate,omitempty" jsonschema_description:"Represents the CPU slowdown factor. Omit or set the rate to 1 to disable throttling"`
	Geolocation          string  "json:\"geolocation,omitempty\" jsonschema_description:\"Geolocation (`<latitude>,<longitude>`) to emulate. Latitude between -90 and 90. Longitude between -180 and 180. Omit to clear the geolocation override.\""
	UserAgent            string  `json:"userAgent,omitempty" jsonschema_description:"User agent to emulate. Omit or set to empty string to clear the user agent override."`
	ColorScheme          string  `json:"colorScheme,omitempty" jsonschema_description:"Emulate the dark or the light mode. Omit or set to \"auto\" to reset to the default."`
	ForcedColors         string  "json:\"forcedColors,omitempty\" jsonschema_description:\"Emulate the `forced-colors` CSS media feature. Omit or set to \\\"auto\\\" to reset to the default.\""
	PrefersContrast      string  "json:\"prefersContrast,omitempty\" jsonschema_description:\"Emulate the `prefers-contrast` CSS media feature. Omit or set to \\\"auto\\\" to reset to the default.\""
	PrefersReducedMotion string  "json:\"prefersReducedMotion,omitempty\" jsonschema_description:\"Emulate the `prefers-reduced-motion` CSS media feature. Omit or set to \\\"auto\\\" to reset to the default.\""
	Viewport             string  `json:"viewport,omitempty" jsonschema_description:"Emulate device viewports '<width>x<height>x<devicePixelRatio>[,mobile][,touch][,landscape]'. 'touch' and 'mobile' to emulate mobile devices. 'landscape' to emulate landscape mode. Omit to clear the viewport override."`
	ExtraHTTPHeaders     *string `json:"extraHttpHeaders,omitempty" jsonschema_description:"Extra HTTP headers as a JSON string object, e.g. {\"X-Custom\": \"value\", \"Authorization\": \"Bearer token\"}. Headers are included into every HTTP request originating from the page and persist across navigations until cleared. Pass an empty string to clear all extra headers."`
}

func (s *Server) emulate() tool {
	t := newTool("emulate", "Emulates various features on the target page. Each call replaces all emulation settings (except extraHttpHeaders), so pass all desired settings in a single call.", pageScope,
		func(ctx context.Context, c *call, a *emulateArgs) error {
			want, err := a.emulation(c.page.Emulation())
			if err != nil {
				return err
			}
			if err := c.page.Emulate(ctx, want); err != nil {
				return err
			}
			c.resp.say("Emulation configured successfully")
			return nil
		})
	patchSchema(&t, map[string]map[string]any{
		"networkConditions":    {"enum": append([]string{noNetworkEmulation}, browser.NetworkPresetNames()...)},
		"extraHttpHeaders":     {"type": "string"}, // not null: "" clears them
		"cpuThrottlingRate":    {"minimum": minCPURate, "maximum": maxCPURate},
		"colorScheme":          {"enum": colorSchemes},
		"forcedColors":         {"enum": forcedColorsValues},
		"prefersContrast":      {"enum": prefersContrastValues},
		"prefersReducedMotion": {"enum": reducedMotionValues},
	})
	return t
}

// emulation turns the arguments into the page's new overrides. Every
// override the arguments omit ends, except the extra headers, which stay
// as in have unless given.
func (a *emulateArgs) emulation(have browser.Emulation) (browser.Emulation, error) {
	var e browser.Emulation
	if n := a.NetworkConditions; n != "" && n != noNetworkEmulation {
		if _, ok := browser.LookupNetworkPreset(n); !ok {
			return e, &argError{fmt.Sprintf("invalid networkConditions %q: want one of %s, or omit it to stop throttling", n, quoteAll(browser.NetworkPresetNames()))}
		}
		e.Network = n
	}
	// A rate of 0 reads as an omitted one: no throttling.
	if r := a.CPUThrottlingRate; r != 0 {
		if !(r >= minCPURate && r <= maxCPURate) {
			return e, &argError{fmt.Sprintf("invalid cpuThrottlingRate %v: want a slowdown factor from %d to %d; 1 or omitting it stops throttling", r, minCPURate, maxCPURate)}
		}
		if r > 1 {
			e.CPURate = r
		}
	}
	var err error
	if e.Geolocation, err = parseGeolocation(a.Geolocation); err != nil {
		return e, err
	}
	e.UserAgent = a.UserAgent
	media := []struct {
		arg    string
		value  string
		valid  []string
		target *string
	}{
		{"colorScheme", a.ColorScheme, colorSchemes, &e.ColorScheme},
		{"forcedColors", a.ForcedColors, forcedColorsValues, &e.ForcedColors},
		{"prefersContrast", a.PrefersContrast, prefersContrastValues, &e.PrefersContrast},
		{"prefersReducedMotion", a.PrefersReducedMotion, reducedMotionValues, &e.PrefersReducedMotion},
	}
	for _, m := range media {
		v := m.value
		if v != "" && !slices.Contains(m.valid, v) {
			return e, &argError{fmt.Sprintf("invalid %s %q: want one of %s", m.arg, v, quoteAll(m.valid))}
		}
		if v != "auto" {
			*m.target = v
		}
	}
	if e.Viewport, err = parseViewport(a.Viewport); err != nil {
		return e, err
	}
	e.Headers = have.Headers
	if a.ExtraHTTPHeaders != nil {
		if e.Headers, err = parseHeaders(*a.ExtraHTTPHeaders); err != nil {
			return e, err
		}
	}
	return e, nil
}

// parseGeolocation reads "<latitude>,<longitude>"; "" means none.
func parseGeolocation(s string) (*browser.Geolocation, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	const want = `want "<latitude>,<longitude>" in degrees, such as "48.8584,2.2945", with the latitude from -90 to 90 and the longitude from -180 to 180`
	lat, lon, ok := strings.Cut(s, ",")
	if !ok {
		return nil, &argError{fmt.Sprintf("invalid geolocation %q: %s", s, want)}
	}
	la, err1 := strconv.ParseFloat(strings.TrimSpace(lat), 64)
	lo, err2 := strconv.ParseFloat(strings.TrimSpace(lon), 64)
	if err1 != nil || err2 != nil || !(la >= -90 && la <= 90) || !(lo >= -180 && lo <= 180) {
		return nil, &argError{fmt.Sprintf("invalid geolocation %q: %s", s, want)}
	}
	return &browser.Geolocation{Latitude: la, Longitude: lo}, nil
}

// parseViewport reads "<width>x<height>[x<devicePixelRatio>][,mobile][,touch][,landscape]";
// "" means none.
func parseViewport(s string) (*browser.Viewport, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return &argError{fmt.Sprintf("invalid viewport %q: %s; want %s, such as '390x844x3,mobile,touch'", s, why, viewportFormat)}
	}
	parts := strings.Split(s, ",")
	dims := strings.Split(strings.TrimSpace(parts[0]), "x")
	if len(dims) < 2 || len(dims) > 3 {
		return nil, bad("want two or three numbers joined by x")
	}
	var v browser.Viewport
	var err error
	if v.Width, err = strconv.ParseInt(strings.TrimSpace(dims[0]), 10, 64); err != nil || v.Width <= 0 {
		return nil, bad(fmt.Sprintf("the width %q is not a positive whole number", dims[0]))
	}
	if v.Height, err = strconv.ParseInt(strings.TrimSpace(dims[1]), 10, 64); err != nil || v.Height <= 0 {
		return nil, bad(fmt.Sprintf("the height %q is not a positive whole number", dims[1]))
	}
	if len(dims) == 3 {
		if v.DeviceScaleFactor, err = strconv.ParseFloat(strings.TrimSpace(dims[2]), 64); err != nil || !(v.DeviceScaleFactor > 0) {
			return nil, bad(fmt.Sprintf("the devicePixelRatio %q is not a positive number", dims[2]))
		}
	}
	for _, flag := range parts[1:] {
		switch strings.TrimSpace(flag) {
		case "mobile":
			v.Mobile = true
		case "touch":
			v.Touch = true
		case "landscape":
			v.Landscape = true
		default:
			return nil, bad(fmt.Sprintf("unknown flag %q: the flags are %s", strings.TrimSpace(flag), quoteAll(viewportFlags)))
		}
	}
	return &v, nil
}

// parseHeaders reads a JSON object of header names and string values; ""
// means none.
func parseHeaders(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(s), &raw); err != nil || raw == nil {
		return nil, &argError{fmt.Sprintf(`invalid extraHttpHeaders: want a JSON object of header names and string values, such as {"X-Custom": "value"}, or "" to clear them (%v)`, err)}
	}
	h := make(map[string]string, len(raw))
	for k, v := range raw {
		str, ok := v.(string)
		if !ok {
			return nil, &argError{fmt.Sprintf("invalid extraHttpHeaders: the value of %q is %v, want a string", k, v)}
		}
		h[k] = str
	}
	return h, nil
}

type resizeArgs struct {
	pageArg
	Width  int64 `json:"width" jsonschema:"Page width"`
	Height int64 `json:"height" jsonschema:"Page height"`
}

func (s *Server) resizePage() tool {
	t := newTool("resize_page", "Resizes the page's window so that the page has specified dimension", pageScope,
		func(ctx context.Context, c *call, a *resizeArgs) error {
			if a.Width <= 0 || a.Height <= 0 {
				return &argError{fmt.Sprintf("invalid size %dx%d: want a width and a height in CSS pixels greater than 0", a.Width, a.Height)}
			}
			if err := c.page.Resize(ctx, a.Width, a.Height); err != nil {
				return err
			}
			c.resp.includePages()
			return nil
		})
	t.answersDialogs = true // the window is the browser's, not the page's
	patchSchema(&t, map[string]map[string]any{
		"width":  {"exclusiveMinimum": 0},
		"height": {"exclusiveMinimum": 0},
	})
	return t
}

// emulationSilent are the page tools whose answers do not repeat the page's
// emulation, because chrome-devtools-mcp does not treat them as acting on
// one page's content.
var emulationSilent = map[string]bool{"evaluate_script": true, "new_page": true, "close_page": true}

// emulationLines are the "Emulating …" lines that chrome-devtools-mcp puts in
// every answer about a page with emulation on, in its order. Extra headers
// have no line, as there.
func emulationLines(c *call) []string {
	p := c.page
	if p == nil || p.Closed() || emulationSilent[c.req.Params.Name] {
		return nil
	}
	e := p.Emulation()
	var lines []string
	if e.Network != "" {
		lines = append(lines,
			"Emulating network conditions: "+e.Network,
			fmt.Sprintf("Default navigation timeout set to %d ms", p.Scale(browser.DefaultNavigationTimeout).Milliseconds()))
	}
	if g := e.Geolocation; g != nil {
		lines = append(lines, fmt.Sprintf("Emulating geolocation: latitude=%s, longitude=%s", jsNumber(g.Latitude), jsNumber(g.Longitude)))
	}
	if v := e.Viewport; v != nil {
		lines = append(lines, "Emulating viewport: "+viewportJSON(v))
	}
	if e.UserAgent != "" {
		lines = append(lines, "Emulating user agent: "+e.UserAgent)
	}
	if e.CPURate > 1 {
		lines = append(lines, fmt.Sprintf("Emulating CPU throttling: %sx slowdown", jsNumber(e.CPURate)))
	}
	for _, m := range []struct{ name, value string }{
		{"color scheme", e.ColorScheme},
		{"forced-colors", e.ForcedColors},
		{"prefers-contrast", e.PrefersContrast},
		{"prefers-reduced-motion", e.PrefersReducedMotion},
	} {
		if m.value != "" {
			lines = append(lines, fmt.Sprintf("Emulating %s: %s", m.name, m.value))
		}
	}
	return lines
}

// viewportJSON is the viewport as chrome-devtools-mcp prints it: its keys in
// its order, and no deviceScaleFactor when none was given.
func viewportJSON(v *browser.Viewport) string {
	out := struct {
		DeviceScaleFactor *float64 `json:"deviceScaleFactor,omitempty"`
		IsMobile          bool     `json:"isMobile"`
		HasTouch          bool     `json:"hasTouch"`
		IsLandscape       bool     `json:"isLandscape"`
		Width             int64    `json:"width"`
		Height            int64    `json:"height"`
	}{nil, v.Mobile, v.Touch, v.Landscape, v.Width, v.Height}
	if v.DeviceScaleFactor > 0 {
		out.DeviceScaleFactor = &v.DeviceScaleFactor
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// jsNumber formats a number as JavaScript prints it, for the usual range.
func jsNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// quoteAll lists values for an error message: "a", "b", "c".
func quoteAll(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

// patchSchema adds JSON Schema keywords that struct tags cannot say, such as
// enums or number bounds, to properties of a tool's input schema, or adds a
// property the struct does not have (the properties of every tool). It
// keeps the order of the keys, which agents read.
func patchSchema(t *tool, extra map[string]map[string]any) {
	var schema, props orderedObject
	must := func(err error) {
		if err != nil {
			panic(fmt.Sprintf("%s: patch the input schema: %v", t.def.Name, err))
		}
	}
	must(json.Unmarshal(t.def.RawInputSchema, &schema))
	if raw := schema.vals["properties"]; raw != nil { // a tool without arguments has none
		must(json.Unmarshal(raw, &props))
	}
	for name, kw := range extra {
		var prop orderedObject
		if raw := props.vals[name]; raw != nil {
			must(json.Unmarshal(raw, &prop))
		}
		for _, k := range slices.Sorted(maps.Keys(kw)) {
			v, err := json.Marshal(kw[k])
			must(err)
			prop.set(k, v)
		}
		props.set(name, prop.bytes())
	}
	schema.set("properties", props.bytes())
	t.def.RawInputSchema = schema.bytes()
}

// orderedObject is a JSON object that keeps the order of its keys.
type orderedObject struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *orderedObject) set(k string, v json.RawMessage) {
	if o.vals == nil {
		o.vals = map[string]json.RawMessage{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *orderedObject) UnmarshalJSON(b []byte) error {
	o.keys, o.vals = nil, map[string]json.RawMessage{}
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("want a JSON object, got %s", b)
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return err
		}
		o.set(tok.(string), v)
	}
	return nil
}

// bytes is the object's JSON, its values as they came; json.Marshal would
// escape the < and > of the descriptions.
func (o orderedObject) bytes() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}
