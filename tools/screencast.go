package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/pagemux/pagemux/browser"
)

// A screencast spans calls as a trace does, but holds no lock key from
// screencast_start to screencast_stop: Chrome screencasts each tab on its
// own, so pages record side by side, and the recording must not keep other
// tools off its page (an agent records what it does there). The running
// screencast is state on its page (browser.Page.Screencast), which is what
// keeps it to one per page; start and stop take the page's lock per call.

func (s *Server) screencastTools() []tool {
	return []tool{s.startScreencast(), s.stopScreencast()}
}

type screencastStartArgs struct {
	pageArg
	FilePath string `json:"filePath,omitempty" jsonschema:"Output file path (.mp4). Uses mkdtemp to generate a unique path if not provided."`
}

func (s *Server) startScreencast() tool {
	t := newTool("screencast_start", "Starts recording a screencast (video) of the target page.", pageScope,
		func(ctx context.Context, c *call, a *screencastStartArgs) error {
			if c.page.Screencast() != nil {
				return errScreencastActive
			}
			// Like chrome-devtools-mcp, the video is always an MP4: another
			// extension is replaced.
			path, tempDir := a.FilePath, ""
			if path == "" {
				dir, err := os.MkdirTemp(s.files.tempDir(ctx), "pagemux-screencast-")
				if err != nil {
					return err
				}
				path, tempDir = filepath.Join(dir, "screencast.mp4"), dir
			} else {
				full, err := s.files.output(ctx, strings.TrimSuffix(path, filepath.Ext(path))+".mp4")
				if err != nil {
					return err
				}
				path = full
			}
			sc, err := c.page.StartScreencast(ctx, path)
			if err != nil {
				if tempDir != "" {
					os.RemoveAll(tempDir)
				}
				if errors.Is(err, browser.ErrScreencastActive) {
					return errScreencastActive
				}
				return err
			}
			go s.watchScreencast(c.page, sc)
			c.resp.say("Screencast recording started. The recording will be saved to %s. Use screencast_stop to stop recording.", path)
			return nil
		})
	// A page with an open dialog runs no script, and starting needs the
	// page's size: the Guard reports the dialog, as for other tools.
	return t
}

// errScreencastActive is chrome-devtools-mcp's text, as a tool error.
var errScreencastActive = &argError{"a screencast recording is already in progress. Use screencast_stop to stop it before starting a new one."}

func (s *Server) stopScreencast() tool {
	t := newTool("screencast_stop", "Stops the active screencast recording on the target page.", pageScope,
		func(ctx context.Context, c *call, a *pageArg) error {
			sc := c.page.Screencast()
			if sc == nil {
				return &argError{"no active screencast recording to stop."}
			}
			progressFrom(ctx).phase("encoding the screencast")
			if _, err := sc.Stop(ctx); err != nil {
				return err
			}
			c.resp.say("The screencast recording has been stopped and saved to %s.", sc.Path)
			return nil
		})
	t.answersDialogs = true // stopping needs nothing of the page's script
	return t
}

// watchScreencast logs how a screencast that nobody stopped ended: its
// page closed (also when the server or Chrome went away), and the video
// was finished without a screencast_stop to hand its path to.
func (s *Server) watchScreencast(p *browser.Page, sc *browser.Screencast) {
	<-sc.Done()
	frames, reason, err := sc.Result()
	switch {
	case reason == "":
	case err != nil:
		s.log.Warn("screencast ended by itself without a video", "page", p.ID, "reason", reason, "error", err)
	default:
		s.log.Info("screencast ended by itself", "page", p.ID, "reason", reason, "path", sc.Path, "frames", frames)
	}
}
