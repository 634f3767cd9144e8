package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/tools"
)

// profileConfig is what the flags of leaner answers say: the tool profile
// (--tools, --slim), the screenshots' cap (--screenshot-max,
// --screenshot-quality, --image-responses) and --browser-idle.
type profileConfig struct {
	tools       string
	slim        bool
	shotMax     string
	shotQuality int
	images      string
	idle        time.Duration
	idleSet     bool // --browser-idle was given: its default depends on --http

	list []string     // tools, split
	max  browser.Size // shotMax, read
}

// defaultHTTPIdle is --browser-idle's default with --http: a server that
// runs for days keeps no Chrome open for nobody. On stdio it is off: the
// client's one session is the user's own.
const defaultHTTPIdle = 30 * time.Minute

// addProfileFlags registers the flags on fs.
func addProfileFlags(fs *flag.FlagSet, c *profileConfig) {
	fs.StringVar(&c.tools, "tools", "", "serve and list only these tools: a comma-separated `LIST` of groups (core, snapshot, scripts, console, network, emulation, performance, memory, audits, files, storage, routes, screencast, har, pdf, navigation, input, read-only, all: docs/RULES.md's groups) and tool names, -NAME to leave one out (all,-scripts); a call of another tool is refused, saying how to get it (default: every tool)")
	fs.BoolVar(&c.slim, "slim", false, "serve chrome-devtools-mcp's --slim tools alone: navigate, evaluate and screenshot, with its names and schemas")
	fs.StringVar(&c.shotMax, "screenshot-max", fmt.Sprintf("%dx%d", tools.DefaultScreenshotMax.Width, tools.DefaultScreenshotMax.Height), "the largest screenshot in pixels, `WxH`: a bigger one is scaled down to fit (the whole of it, never cut) and its answer says from what size; 0x0: no cap")
	fs.IntVar(&c.shotQuality, "screenshot-quality", 0, "the quality `Q` (1-100) of jpeg and webp screenshots whose call gives none (default: Chrome's)")
	fs.StringVar(&c.images, "image-responses", tools.ImagesInclude, "`MODE` include (screenshots come in the answer) or omit (saved in the workspace, the answer gives the file's path alone)")
	fs.Func("browser-idle", "close a Chrome pagemux launched after `D` without calls (no trace, screencast or MCP task running); the next call starts a new one and says the tabs were closed. An attached browser is never closed. 0: never (default: never on stdio, 30m with --http)", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration such as 30m, or 0 for never")
		}
		c.idle, c.idleSet = d, true
		return nil
	})
}

// check reads and checks the flags once parsed; httpOn is --http, which
// gives --browser-idle its default.
func (c *profileConfig) check(httpOn bool) error {
	if c.tools != "" {
		c.list = strings.Split(c.tools, ",")
		if c.slim {
			return fmt.Errorf("--slim and --tools cannot be used together: --slim is its own profile (navigate, evaluate, screenshot)")
		}
		if err := tools.CheckProfile(c.list); err != nil {
			return err
		}
	}
	max, err := parseSize(c.shotMax)
	if err != nil {
		return fmt.Errorf("--screenshot-max %q: %w", c.shotMax, err)
	}
	c.max = max
	if c.shotQuality < 0 || c.shotQuality > 100 {
		return fmt.Errorf("--screenshot-quality %d: want 1 to 100, or 0 for Chrome's default", c.shotQuality)
	}
	if c.images != tools.ImagesInclude && c.images != tools.ImagesOmit {
		return fmt.Errorf("--image-responses %q: want %s or %s", c.images, tools.ImagesInclude, tools.ImagesOmit)
	}
	if !c.idleSet && httpOn {
		c.idle = defaultHTTPIdle
	}
	return nil
}

// parseSize reads WxH, two whole numbers of pixels, 0 or more.
func parseSize(s string) (browser.Size, error) {
	w, h, ok := strings.Cut(strings.ToLower(s), "x")
	width, err1 := strconv.Atoi(w)
	height, err2 := strconv.Atoi(h)
	if !ok || err1 != nil || err2 != nil || width < 0 || height < 0 {
		return browser.Size{}, fmt.Errorf("want WxH in pixels, such as 2000x2000 (0x0: no cap)")
	}
	return browser.Size{Width: width, Height: height}, nil
}

// options puts the flags on a server's options.
func (c *profileConfig) options(o tools.Options) tools.Options {
	o.Tools, o.Slim = c.list, c.slim
	o.ScreenshotMax, o.ScreenshotQuality, o.ImageResponses = c.max, c.shotQuality, c.images
	o.BrowserIdle = c.idle
	return o
}
