package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// A screencast spans calls as a trace does, but holds no lock key from
// screencast_start to screencast_stop: Chrome screencasts each tab on its
// own, so pages record side by side, and the recording must not keep other
// tools off its page (an agent records what it does there). The running
// screencast is state on its page (browser.Page.Screencast), which is what
// keeps it to one per page; start and stop take the page's lock per call.
//
// A screencast records for at most holdLimit (--max-hold, see holds.go):
// past it pagemux stops it, the video is finished where the start said it
// would be (a path in the agent's workspace), and the agent's next answer
// says so; screencast_stop on the page then hands the video out as though
// it had stopped it.

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
			sc, err := c.page.Capture().StartScreencast(ctx, path)
			if err != nil {
				if tempDir != "" {
					os.RemoveAll(tempDir)
				}
				if errors.Is(err, browser.ErrScreencastActive) {
					return errScreencastActive
				}
				return err
			}
			h := &castHold{sc: sc, page: c.page, agent: holdAgent(ctx), limit: s.holdLimit(ctx, holdScreencast)}
			s.casts.add(h)
			go s.watchScreencast(h)
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
			if h, expired := s.casts.stop(c.page, sc); expired {
				return s.answerExpiredCast(ctx, c, h)
			}
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

// castFinishWait bounds how long ending a screencast at its limit waits
// for its video; ffmpeg's own bound is shorter (browser.Screencast.Stop).
const castFinishWait = 2 * time.Minute

// watchScreencast ends a screencast at its limit (expireScreencast), and
// logs how one that nobody stopped ended otherwise: its page closed (also
// when the server or Chrome went away), and the video was finished
// without a screencast_stop to hand its path to.
func (s *Server) watchScreencast(h *castHold) {
	t := time.NewTimer(h.limit)
	defer t.Stop()
	select {
	case <-h.sc.Done():
	case <-t.C:
		if s.casts.expire(h) {
			s.expireScreencast(h)
			return
		}
		<-h.sc.Done() // screencast_stop came first
	}
	s.casts.ended(h)
	frames, reason, err := h.sc.Result()
	switch {
	case reason == "":
	case err != nil:
		s.log.Warn("screencast ended by itself without a video", "page", h.page.ID, "reason", reason, "error", err)
	default:
		s.log.Info("screencast ended by itself", "page", h.page.ID, "reason", reason, "path", h.sc.Path, "frames", frames)
	}
}

// expireScreencast stops a screencast that reached its limit, waits for
// its video, and tells its agent's next answer where it is.
func (s *Server) expireScreencast(h *castHold) {
	ctx, cancel := context.WithTimeout(context.Background(), castFinishWait)
	defer cancel()
	frames, err := h.sc.Stop(ctx)
	head := fmt.Sprintf("Your screencast on page %d reached its %v limit and was stopped", h.page.ID, h.limit)
	note := fmt.Sprintf("%s; the video is saved at %s (screencast_stop also hands it out).", head, h.sc.Path)
	if err != nil {
		note = fmt.Sprintf("%s, but no video was saved: %v.", head, err)
	}
	s.log.Info("screencast reached its limit", "page", h.page.ID, "limit", h.limit, "path", h.sc.Path, "frames", frames, "error", err)
	s.casts.mu.Lock()
	defer s.casts.mu.Unlock()
	if !h.stopped { // else screencast_stop handed it out already, and said as much
		s.holdNotes.add(h.agent, h, note)
	}
}

// answerExpiredCast is screencast_stop's answer on a page whose screencast
// its limit ended: the video, once finished, as a stop would hand it out.
func (s *Server) answerExpiredCast(ctx context.Context, c *call, h *castHold) error {
	select {
	case <-h.sc.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if me := holdAgent(ctx); me == h.agent {
		// This answer says as much. The note, if there is one, came
		// before: the hold was stopped (casts.stop) before it came.
		s.holdNotes.drop(me, h)
	}
	if _, _, err := h.sc.Result(); err != nil {
		return fmt.Errorf("the screencast reached its %v limit and was stopped, but no video was saved: %w", h.limit, err)
	}
	c.resp.say("The screencast recording had stopped by itself: it reached its %v limit. It was saved to %s.", h.limit, h.sc.Path)
	return nil
}

// screencasts holds the hold of each page's last screencast: while it
// records, and, when its limit ended it, until screencast_stop on the page
// handed it out or the page closed. Its zero value is ready for use.
type screencasts struct {
	mu sync.Mutex
	of map[*browser.Page]*castHold
}

// castHold is one screencast as a hold across calls.
type castHold struct {
	sc    *browser.Screencast
	page  *browser.Page
	agent string        // holdAgent of the start: told when the limit ends it
	limit time.Duration // holdLimit
	// expired says its limit ended it; stopped, that screencast_stop did,
	// or handed out what the limit left. Guarded by screencasts.mu.
	expired, stopped bool
}

// add records a new screencast's hold, in place of the page's last one,
// and forgets those of closed pages.
func (cs *screencasts) add(h *castHold) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.of == nil {
		cs.of = map[*browser.Page]*castHold{}
	}
	for p := range cs.of {
		if p.Closed() {
			delete(cs.of, p)
		}
	}
	cs.of[h.page] = h
}

// expire marks h ended by its limit, unless screencast_stop came first or
// it ended otherwise.
func (cs *screencasts) expire(h *castHold) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	select {
	case <-h.sc.Done():
		return false
	default:
	}
	if h.stopped {
		return false
	}
	h.expired = true
	return true
}

// stop is what screencast_stop on p ends: the hold of sc, p's running
// screencast, which its limit may then no longer end; or, with expired
// set, the hold of p's last screencast, which its limit ended and no stop
// handed out yet. It is nil when neither is there.
func (cs *screencasts) stop(p *browser.Page, sc *browser.Screencast) (h *castHold, expired bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	h = cs.of[p]
	if h == nil || h.stopped || (!h.expired && h.sc != sc) {
		return nil, false
	}
	h.stopped = true
	if h.expired {
		delete(cs.of, p)
	}
	return h, h.expired
}

// ended forgets the hold of a screencast that ended without its limit.
func (cs *screencasts) ended(h *castHold) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.of[h.page] == h {
		delete(cs.of, h.page)
	}
}
