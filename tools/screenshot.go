package tools

import (
	"context"
	"fmt"
	"os"

	"github.com/pagemux/pagemux/browser"
)

func (s *Server) screenshotTools() []tool { return []tool{s.takeScreenshot()} }

type screenshotArgs struct {
	pageArg
	Format   string `json:"format,omitempty" jsonschema:"Type of format to save the screenshot as. Default is \"png\""`
	Quality  int    `json:"quality,omitempty" jsonschema:"Compression quality for JPEG and WebP formats (0-100). Higher values mean better quality but larger file sizes. Ignored for PNG format."`
	UID      string `json:"uid,omitempty" jsonschema:"The uid of an element on the page from the page content snapshot. If omitted takes a pages screenshot."`
	FullPage bool   `json:"fullPage,omitempty" jsonschema:"If set to true takes a screenshot of the full page instead of the currently visible viewport. Incompatible with uid."`
	FilePath string `json:"filePath,omitempty" jsonschema:"The absolute path, or a path relative to the workspace (its first root; never the server's working directory), to save the screenshot to instead of attaching it to the response."`
}

// shotSettings are the server's settings of screenshots: --screenshot-max,
// --screenshot-quality and --image-responses. The zero value caps nothing
// and attaches images.
type shotSettings struct {
	max     browser.Size
	quality int  // for jpeg and webp when a call gives none; 0: Chrome's
	omit    bool // answer with the saved file's path, never the image
}

// Image responses (Options.ImageResponses).
const (
	// ImagesInclude attaches a screenshot to its answer (the default).
	ImagesInclude = "include"
	// ImagesOmit saves it in the workspace and answers with its path.
	ImagesOmit = "omit"
)

// DefaultScreenshotMax is --screenshot-max's default: big enough for a
// desktop viewport at twice its pixels, small enough for models, which
// scale or refuse bigger images.
var DefaultScreenshotMax = browser.Size{Width: 2000, Height: 2000}

// newShotSettings checks the Options of screenshots.
func newShotSettings(o Options) (shotSettings, error) {
	if o.ScreenshotMax.Width < 0 || o.ScreenshotMax.Height < 0 {
		return shotSettings{}, fmt.Errorf("screenshot cap %dx%d: want sizes of 0 (no cap) or more", o.ScreenshotMax.Width, o.ScreenshotMax.Height)
	}
	if o.ScreenshotQuality < 0 || o.ScreenshotQuality > 100 {
		return shotSettings{}, fmt.Errorf("screenshot quality %d: want 0 (Chrome's default) to 100", o.ScreenshotQuality)
	}
	switch o.ImageResponses {
	case "", ImagesInclude, ImagesOmit:
	default:
		return shotSettings{}, fmt.Errorf("image responses %q: want %s or %s", o.ImageResponses, ImagesInclude, ImagesOmit)
	}
	return shotSettings{max: o.ScreenshotMax, quality: o.ScreenshotQuality, omit: o.ImageResponses == ImagesOmit}, nil
}

// cap puts the server's cap, and its quality when the call gives none, on
// a capture's options.
func (st shotSettings) cap(o browser.ScreenshotOptions) browser.ScreenshotOptions {
	o.Max = st.max
	if o.Quality == 0 && o.Format != "" && o.Format != "png" {
		o.Quality = st.quality
	}
	return o
}

// scaledNote says that a capture was scaled down to fit the cap, and from
// what size; "" when it was not.
func scaledNote(shot browser.Shot) string {
	if !shot.Scaled {
		return ""
	}
	return fmt.Sprintf("The screenshot was scaled down to %dx%d from %dx%d pixels to fit the server's --screenshot-max; take a smaller part (uid, or without fullPage) for more detail.",
		shot.Size.Width, shot.Size.Height, shot.From.Width, shot.From.Height)
}

// maxInlineImage is the largest screenshot attached to a result; a bigger
// one goes to a temporary file, as chrome-devtools-mcp does, since clients
// and models choke on huge images.
const maxInlineImage = 2 << 20

func (s *Server) takeScreenshot() tool {
	return newTool("take_screenshot", "Take a screenshot of the page or element.", pageScope,
		func(ctx context.Context, c *call, a *screenshotArgs) error {
			format := a.Format
			if format == "" {
				format = "png"
			}
			if format != "png" && format != "jpeg" && format != "webp" {
				return &argError{fmt.Sprintf("invalid format %q: want png, jpeg or webp", a.Format)}
			}
			if a.UID != "" && a.FullPage {
				return &argError{"fullPage and uid cannot be used together: give one of them"}
			}
			if a.FilePath != "" {
				// Refuse a bad path before the capture, not after.
				if _, err := s.files.output(ctx, a.FilePath); err != nil {
					return err
				}
			}
			opts := browser.ScreenshotOptions{Format: format, FullPage: a.FullPage, UID: a.UID}
			if a.Quality < 0 || a.Quality > 100 {
				return &argError{fmt.Sprintf("invalid quality %d: want 0 to 100", a.Quality)}
			}
			opts.Quality = a.Quality
			shot, err := c.page.Capture().CaptureScreenshot(ctx, s.shots.cap(opts))
			if err != nil {
				return err
			}
			data := shot.Data
			switch {
			case a.UID != "":
				c.resp.say("Took a screenshot of node with uid \"%s\".", a.UID)
			case a.FullPage:
				c.resp.say("Took a screenshot of the full current page.")
			default:
				c.resp.say("Took a screenshot of the current page's viewport.")
			}
			if note := scaledNote(shot); note != "" {
				c.resp.say("%s", note)
			}
			switch {
			case a.FilePath != "":
				full, err := s.files.write(ctx, a.FilePath, data)
				if err != nil {
					return err
				}
				c.resp.say("Saved screenshot to %s.", full)
			case len(data) >= maxInlineImage || s.shots.omit:
				path, err := saveTemp(s.files.tempDir(ctx), "screenshot-*."+format, data)
				if err != nil {
					return err
				}
				c.resp.say("Saved screenshot to %s.", path)
			default:
				c.resp.image(data, "image/"+format)
			}
			return nil
		})
}

// saveTemp writes data to a new file in dir (the OS temp dir if ""), named
// after pattern as os.CreateTemp does, and returns its path.
func saveTemp(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", fmt.Errorf("save to a temporary file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", fmt.Errorf("save to %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("save to %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}
