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
			switch {
			case a.FilePath != "":
				full, err := s.files.write(ctx, a.FilePath, data)
				if err != nil {
					return err
				}
				c.resp.say("Saved screenshot to %s.", full)
			case len(data) >= maxInlineImage:
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
