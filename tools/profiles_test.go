package tools

import (
	"encoding/json"
	"image"
	"image/color"
	_ "image/png"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/rules"
)

// cdmSlimTools is chrome-devtools-mcp 1.11.0's tools/list with --slim, as
// its server answered it over stdio (`--slim --headless --isolated`;
// initialize, notifications/initialized, tools/list), the way
// testdata/cdm/tools-1.11.0.json was recorded.
const cdmSlimTools = "testdata/cdm-slim/tools-1.11.0.json"

// listedTools is the names of the tools c lists, sorted.
func listedTools(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestProfileParse: --tools lists add groups and tools in turn, -NAME
// takes one away, a list of removals starts from every tool; an unknown
// name, a list that leaves nothing and --slim with --tools are refused.
func TestProfileParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		list []string
		slim bool
		has  []string
		not  []string
		err  string
	}{
		{list: []string{"core", "snapshot"}, has: []string{"click", "navigate_page", "take_snapshot"}, not: []string{"evaluate_script", "emulate"}},
		{list: []string{"core", "-input", "click"}, has: []string{"click", "list_pages"}, not: []string{"fill", "hover"}},
		{list: []string{"-scripts", "-storage"}, has: []string{"click", "emulate"}, not: []string{"evaluate_script", "cookie_set"}},
		{list: []string{"evaluate_script"}, has: []string{"evaluate_script"}, not: []string{"click"}},
		{slim: true, has: []string{"navigate", "evaluate", "screenshot"}, not: []string{"navigate_page"}},
		{list: []string{"core", "scriptz"}, err: `"scriptz" is neither a tool nor a group; groups: all, audits,`},
		{list: []string{"scripts", "-evaluate_script"}, err: "leaves no tool"},
		{list: []string{"core"}, slim: true, err: "--slim and --tools cannot be used together"},
	} {
		p, err := newProfile(tc.list, tc.slim)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v slim=%v: error %v, want one with %q", tc.list, tc.slim, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.list, err)
			continue
		}
		for _, n := range tc.has {
			if !p.has(n) {
				t.Errorf("%v leaves out %s", tc.list, n)
			}
		}
		for _, n := range tc.not {
			if p.has(n) {
				t.Errorf("%v has %s", tc.list, n)
			}
		}
	}
	if !(profile{}).has("anything") {
		t.Error("the zero profile must serve every tool")
	}
}

// TestProfiles: a server of --tools core,snapshot,-close_page lists
// exactly those tools, and refuses a call of any other by name with what
// to do; an agent the rules give a tools list sees only those of them
// (its tools/list, over HTTP), while another agent of the same server sees
// the profile's. Screenshots there are capped at 2000x2000 and answered
// with their path alone (--image-responses omit): a 4000x8000 page's full
// screenshot is the whole page scaled down, its bottom included.
func TestProfiles(t *testing.T) {
	t.Parallel()
	set, err := rules.Parse("rules.yaml", []byte(`agents:
  - agent: lead
    tools: [navigation, snapshot]
`))
	if err != nil {
		t.Fatal(err)
	}
	env := newAgentEnvWith(t, Options{Agents: agents.New(agents.Owned), Rules: rules.NewEngine(set),
		Tools: []string{"core", "snapshot", "-close_page"}, ScreenshotMax: browser.Size{Width: 2000, Height: 2000}, ImageResponses: ImagesOmit})
	team := env.session(t, "team-secret-1", "worker")
	lead := env.session(t, "lead-secret-1", "boss")

	var want []string
	for _, g := range []string{"core", "snapshot"} {
		want = append(want, rules.Groups[g]...)
	}
	want = slices.DeleteFunc(want, func(n string) bool { return n == "close_page" })
	slices.Sort(want)
	want = slices.Compact(want)
	if got := listedTools(t, team); !slices.Equal(got, want) {
		t.Errorf("the profile lists\n%v\nwant\n%v", got, want)
	}
	wantLead := []string{"get_css_styles", "navigate_page", "new_page", "select_page", "take_screenshot", "take_snapshot"}
	if got := listedTools(t, lead); !slices.Equal(got, wantLead) {
		t.Errorf("lead, whose rules entry says navigation and snapshot, lists\n%v\nwant\n%v", got, wantLead)
	}

	t.Run("refused", func(t *testing.T) {
		for _, c := range []*client.Client{team, lead} {
			text, failed := use(t, c, "evaluate_script", map[string]any{"function": "() => document.cookie"})
			if !failed || !strings.Contains(text, "evaluate_script is not in this server's tool profile (--tools core,snapshot,-close_page)") ||
				!strings.Contains(text, "a group that has it: scripts") {
				t.Errorf("evaluate_script outside the profile: %v %s", failed, text)
			}
		}
		text, failed := use(t, team, "close_page", map[string]any{"pageId": 1})
		if !failed || !strings.Contains(text, "close_page is not in this server's tool profile") {
			t.Errorf("close_page, taken out of the profile: %v %s", failed, text)
		}
		// lead's rules leave click out of its list; the rules refuse it too.
		text, failed = use(t, lead, "click", map[string]any{"uid": "1_1"})
		if !failed || !strings.Contains(text, "not allowed to agent lead") {
			t.Errorf("lead's click, outside its rules' tools: %v %s", failed, text)
		}
	})

	t.Run("capped", func(t *testing.T) {
		page := openAs(t, team, testSite.URL+"/tall.html")
		text := useOK(t, team, "take_screenshot", map[string]any{"pageId": page, "fullPage": true})
		mustContain(t, text, "Took a screenshot of the full current page.", "scaled down to 1000x2000 from 4000x8000 pixels")
		img := savedImage(t, text)
		if b := img.Bounds(); b.Dx() != 1000 || b.Dy() != 2000 {
			t.Fatalf("the screenshot is %dx%d, want 1000x2000 (4000x8000 within 2000x2000)", b.Dx(), b.Dy())
		}
		if c := rgbAt(img, 500, 5); c != (color.RGBA{0, 0, 255, 255}) {
			t.Errorf("the top of the page is %v, want blue", c)
		}
		if c := rgbAt(img, 500, 1995); c != (color.RGBA{255, 0, 0, 255}) {
			t.Errorf("the bottom of the page is %v, want red: the page was cut, not scaled", c)
		}
		// A page that lies about its devicePixelRatio gets the same cap.
		liar := openAs(t, team, testSite.URL+"/tall-liar.html")
		text = useOK(t, team, "take_screenshot", map[string]any{"pageId": liar, "fullPage": true})
		mustContain(t, text, "scaled down to 2000x2000 from 2400x2400 pixels")
		if b := savedImage(t, text).Bounds(); b.Dx() != 2000 || b.Dy() != 2000 {
			t.Fatalf("the lying page's screenshot is %dx%d, want 2000x2000", b.Dx(), b.Dy())
		}
		// The viewport fits: not scaled, and still no image in the answer.
		r := mcptest.Call(t.Context(), team, "take_screenshot", map[string]any{"pageId": page})
		if r.Err != nil || r.IsError || len(r.Images) != 0 || strings.Contains(r.Text, "scaled") {
			t.Fatalf("a viewport screenshot with --image-responses omit: %v %d images %s", r.IsError, len(r.Images), r.Text)
		}
		savedImage(t, r.Text)
	})
}

// savedScreenshot finds the path a screenshot's answer names.
var savedScreenshot = regexp.MustCompile(`Saved screenshot to (.+)\.`)

// savedImage decodes the file an answer says it saved the screenshot to.
func savedImage(t *testing.T, text string) image.Image {
	t.Helper()
	m := savedScreenshot.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no saved screenshot in %q", text)
	}
	f, err := os.Open(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// rgbAt is the colour of img at x, y.
func rgbAt(img image.Image, x, y int) color.RGBA {
	r, g, b, a := img.At(x, y).RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

// TestSlim: --slim lists chrome-devtools-mcp's --slim tools, names,
// descriptions and schemas as it answers them, and nothing else; each
// acts on the selected page, and any other tool is refused by name.
func TestSlim(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Server: Options{Slim: true}})
	raw, err := os.ReadFile(filepath.FromSlash(cdmSlimTools))
	if err != nil {
		t.Fatal(err)
	}
	var node mcp.ListToolsResult
	if err := json.Unmarshal(raw, &node); err != nil {
		t.Fatal(err)
	}
	res, err := e.client.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(node.Tools) {
		t.Fatalf("--slim lists %d tools, chrome-devtools-mcp %d", len(res.Tools), len(node.Tools))
	}
	ours := map[string]mcp.Tool{}
	for _, tool := range res.Tools {
		ours[tool.Name] = tool
	}
	for _, theirs := range node.Tools {
		tool, ok := ours[theirs.Name]
		if !ok {
			t.Errorf("--slim lacks %s", theirs.Name)
			continue
		}
		if tool.Description != theirs.Description {
			t.Errorf("%s's description is %q, want %q", tool.Name, tool.Description, theirs.Description)
		}
		if got, want := slimSchema(t, tool), slimSchema(t, theirs); !reflect.DeepEqual(got, want) {
			t.Errorf("%s's schema is\n%v\nwant\n%v", tool.Name, got, want)
		}
	}

	text := e.ok(t, "navigate", map[string]any{"url": testSite.URL + "/page2.html"})
	mustContain(t, text, "Navigated to "+testSite.URL+"/page2.html.")
	if got := e.ok(t, "evaluate", map[string]any{"script": "document.title + ' ' + (1 + 2)"}); !strings.HasPrefix(got, `"Page Two 3"`) {
		t.Errorf("evaluate answered %q", got)
	}
	if got := e.ok(t, "evaluate", map[string]any{"script": "({a: [1, 2]})"}); !strings.HasPrefix(got, `{"a":[1,2]}`) {
		t.Errorf("evaluate of an object answered %q", got)
	}
	shot := e.call(t, "screenshot", nil)
	path := strings.SplitN(shot.text, "\n", 2)[0]
	if shot.isError || len(shot.images) != 0 || !filepath.IsAbs(path) {
		t.Fatalf("screenshot: %v %d images %q", shot.isError, len(shot.images), shot.text)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Fatalf("the screenshot's file %s: %v", path, err)
	}
	os.Remove(path)
	msg := e.fails(t, "take_snapshot", nil)
	mustContain(t, msg, "take_snapshot is not available with --slim, which serves navigate, evaluate, screenshot")
}

// slimSchema is what TestSlim compares of an input schema: its type, its
// properties (type and description), required and additionalProperties.
func slimSchema(t *testing.T, tool mcp.Tool) map[string]any {
	t.Helper()
	b, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		InputSchema map[string]any `json:"inputSchema"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.InputSchema
	props := map[string]any{}
	if p, ok := s["properties"].(map[string]any); ok {
		props = p
	}
	return map[string]any{"type": s["type"], "properties": props, "required": s["required"], "additionalProperties": s["additionalProperties"]}
}

// TestBrowserIdle: with --browser-idle, the Chrome pagemux launched closes
// once no call came for that long, and the next call starts a new one and
// says that the tabs were closed; a page of before is gone, saying why. A
// performance trace that goes on across calls keeps it open past the time,
// and once it stopped, the close comes.
func TestBrowserIdle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Server: Options{BrowserIdle: time.Second}})
	t.Cleanup(func() { e.srv.Close() })
	closed, held := make(chan struct{}, 4), make(chan struct{}, 64)
	e.srv.idle.onClose = func() { closed <- struct{}{} }
	e.srv.idle.onHeld = func() { held <- struct{}{} }
	await := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Fatalf("after a minute, no %s", what)
		}
	}

	old := e.selectedNew(t)
	await(closed, "idle close")
	if e.b.Running() {
		t.Fatal("chrome still runs after the idle close")
	}
	text := e.ok(t, "list_pages", nil)
	mustContain(t, text, "pagemux closed Chrome after 1s without calls (--browser-idle), and its tabs with it; this call started a new one")
	if !e.b.Running() {
		t.Fatal("the call after the close started no chrome")
	}
	msg := e.fails(t, "take_snapshot", map[string]any{"pageId": old})
	mustContain(t, msg, "is gone (pagemux closed its Chrome after a time without calls")
	if text := e.ok(t, "list_pages", nil); strings.Contains(text, "--browser-idle") {
		t.Errorf("the note came twice: %s", text)
	}

	page := e.selectedNew(t)
	e.ok(t, "performance_start_trace", map[string]any{"pageId": page, "reload": false, "autoStop": false})
	await(held, "idle time held open by the trace")
	if !e.b.Running() {
		t.Fatal("chrome closed while a trace ran")
	}
	e.ok(t, "performance_stop_trace", map[string]any{"pageId": page})
	await(closed, "idle close after the trace stopped")
	if e.b.Running() {
		t.Fatal("chrome still runs after the trace stopped and the idle time passed")
	}
}

// selectedNew opens page2.html in a new page, selected, and returns its id.
// Unlike openPage, it leaves no close_page behind for the test's end.
func (e *testEnv) selectedNew(t *testing.T) int {
	t.Helper()
	text := e.ok(t, "new_page", map[string]any{"url": testSite.URL + "/page2.html"})
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "[selected]") {
			id, err := strconv.Atoi(line[:strings.Index(line, ":")])
			if err == nil {
				return id
			}
		}
	}
	t.Fatalf("new_page: no selected page in\n%s", text)
	return 0
}

// TestShotSettings: the cap and the default quality go on a capture's
// options (the quality on jpeg and webp whose call gives none); bad
// settings are refused.
func TestShotSettings(t *testing.T) {
	t.Parallel()
	st, err := newShotSettings(Options{ScreenshotMax: browser.Size{Width: 800, Height: 600}, ScreenshotQuality: 70, ImageResponses: ImagesOmit})
	if err != nil || !st.omit {
		t.Fatal(err, st)
	}
	for _, tc := range []struct {
		in   browser.ScreenshotOptions
		want int
	}{
		{browser.ScreenshotOptions{Format: "jpeg"}, 70},
		{browser.ScreenshotOptions{Format: "webp", Quality: 20}, 20},
		{browser.ScreenshotOptions{Format: "png"}, 0},
	} {
		got := st.cap(tc.in)
		if got.Quality != tc.want || got.Max != (browser.Size{Width: 800, Height: 600}) {
			t.Errorf("cap(%+v) = %+v, want quality %d and the cap", tc.in, got, tc.want)
		}
	}
	for _, o := range []Options{{ScreenshotMax: browser.Size{Width: -1}}, {ScreenshotQuality: 101}, {ImageResponses: "none"}} {
		if _, err := newShotSettings(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
