package tools

import (
	"context"
	"fmt"

	"github.com/pagemux/pagemux/browser"
)

func (s *Server) screenshotTools() []tool { return []tool{s.takeScreenshot()} }

type screenshotArgs struct {
	pageArg
	Format   string `json:"format,omitempty" jsonschema:"Type of format to save the screenshot as. Default is \"png\""`
	Quality  int    `json:"quality,omitempty" jsonschema:"Compression quality for JPEG and WebP formats (0-100). Higher values mean better quality but larger file sizes. Ignored for PNG format."`
	UID      string `json:"uid,omitempty" jsonschema:"The uid of an element on the page from the page content snapshot. If omitted takes a pages screenshot."`
	FullPage bool   `json:"fullPage,omitempty" jsonschema:"If set to true takes a screenshot of the full page instead of the currently visible viewport. Incompatible with uid."`
}

func (s *Server) takeScreenshot() tool {
	return newTool("take_screenshot", "Take a screenshot of the page or element.", true, pageScope,
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
			opts := browser.ScreenshotOptions{Format: format, FullPage: a.FullPage, UID: a.UID}
			if a.Quality < 0 || a.Quality > 100 {
				return &argError{fmt.Sprintf("invalid quality %d: want 0 to 100", a.Quality)}
			}
			opts.Quality = a.Quality
			data, err := c.page.Screenshot(ctx, opts)
			if err != nil {
				return err
			}
			switch {
			case a.UID != "":
				c.resp.say("Took a screenshot of node with uid \"%s\".", a.UID)
			case a.FullPage:
				c.resp.say("Took a screenshot of the full current page.")
			default:
				c.resp.say("Took a screenshot of the current page's viewport.")
			}
			c.resp.image(data, "image/"+format)
			return nil
		})
}
