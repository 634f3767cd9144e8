package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/pagemux/pagemux/internal/tail"
)

// How a screencast works. Chrome sends the page's frames as JPEG images
// (Page.startScreencast), one each time the page paints, and sends no more
// until each is acknowledged. A Screencast acknowledges every frame and pipes
// it to an ffmpeg process that encodes H.264 into an MP4 file. Frames come
// at the page's own pace, so each is written as many times as it stayed on
// screen, at ScreencastFPS: the video plays in real time.
//
// A screencast belongs to its page, not to a tool call: it records while
// other calls act on the page, until Stop, or until the page goes away, when
// it ends by itself and still writes a complete file. Chrome screencasts
// each tab on its own, so pages record side by side; one page has at most
// one screencast (StartScreencast fails with ErrScreencastActive).

// ScreencastFPS is the frame rate of the videos.
const ScreencastFPS = 25

// The screencast errors.
const (
	// ErrScreencastActive is returned by StartScreencast for a page that
	// records already.
	ErrScreencastActive Error = "a screencast recording is already in progress"
	// ErrNoFFmpeg is returned by StartScreencast when ffmpeg is not on PATH.
	ErrNoFFmpeg Error = "ffmpeg is required for screencast recording but was not found on PATH"
)

// screencastFinish bounds how long ffmpeg may take to finish the file once its
// input ended.
const screencastFinish = time.Minute

// screencasts holds the running screencast of each page.
var screencasts = struct {
	sync.Mutex
	of map[*Page]*Screencast
}{of: map[*Page]*Screencast{}}

// Screencast is a recording of one page into a video file.
type Screencast struct {
	// Path is the file the video goes to.
	Path string
	// Started is when recording began.
	Started time.Time

	p      *Page
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr tail.Buffer
	cancel context.CancelFunc // ends the event listener

	mu     sync.Mutex
	queue  []frame
	wake   chan struct{}
	stop   chan struct{} // closed by the first end
	once   sync.Once
	done   chan struct{} // closed when the file is finished or failed
	frames int           // distinct frames Chrome sent
	reason string        // why it ended by itself; "" when stopped
	err    error
}

type frame struct {
	data    []byte
	session int64
	ack     bool // a frame of Chrome's screencast, to acknowledge
	at      time.Time
}

// Screencast returns the page's running screencast, or nil.
func (p *Page) Screencast() *Screencast {
	screencasts.Lock()
	defer screencasts.Unlock()
	return screencasts.of[p]
}

// FFmpeg returns the path of ffmpeg, or an error wrapping ErrNoFFmpeg.
func FFmpeg() (string, error) {
	path, err := exec.LookPath("ffmpeg")
	if err != nil {
		return "", fmt.Errorf("%w; run ./scripts/setup, which installs Debian's ffmpeg", ErrNoFFmpeg)
	}
	return path, nil
}

// StartScreencast starts recording the page into an MP4 file at path, which
// the caller has checked; ffmpeg creates or truncates it. The recording goes
// on after ctx ends, until Stop or the page goes away.
func (cp Capture) StartScreencast(ctx context.Context, path string) (*Screencast, error) {
	p := cp.p
	ffmpeg, err := FFmpeg()
	if err != nil {
		return nil, err
	}
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	screencasts.Lock()
	if screencasts.of[p] != nil {
		screencasts.Unlock()
		return nil, ErrScreencastActive
	}
	s := &Screencast{Path: path, p: p, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	screencasts.of[p] = s // reserved while it starts
	screencasts.Unlock()
	p.yieldThumbnails() // thumbnail.go: Chrome runs one screencast a tab
	if err := s.start(ctx, ffmpeg); err != nil {
		screencasts.Lock()
		delete(screencasts.of, p)
		screencasts.Unlock()
		return nil, err
	}
	return s, nil
}

func (s *Screencast) start(ctx context.Context, ffmpeg string) (err error) {
	p := s.p
	// ffmpeg would fail only when the first frame comes: find out now.
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cannot write the video: %w", err)
	}
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(s.Path)
		}
	}()
	var w, h int64
	err = p.await(ctx, func(ctx context.Context) error {
		// Record at the page's size in device pixels: without a limit,
		// Chrome scales the frames down.
		raw, err := evaluate(ctx, "[Math.round(innerWidth * devicePixelRatio), Math.round(innerHeight * devicePixelRatio)]")
		if err != nil {
			return err
		}
		var size []int64
		if err := json.Unmarshal(raw, &size); err != nil || len(size) != 2 {
			return fmt.Errorf("read the size of page %d: %s", p.ID, raw)
		}
		w, h = max(2, size[0]&^1), max(2, size[1]&^1) // H.264 wants even sizes
		return nil
	})
	if err != nil {
		return err
	}
	s.cmd = exec.Command(ffmpeg, "-hide_banner", "-loglevel", "error",
		"-f", "image2pipe", "-framerate", strconv.Itoa(ScreencastFPS), "-c:v", "mjpeg", "-i", "pipe:0",
		"-vf", fmt.Sprintf("scale=%d:%d,format=yuv420p", w, h),
		"-c:v", "libx264", "-preset", "ultrafast", "-movflags", "+faststart", "-f", "mp4", "-y", s.Path)
	s.cmd.Stderr = &s.stderr
	s.stdin, err = s.cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start ffmpeg: %w", err)
	}
	// The listener lives as long as the recording, on the tab's context.
	lctx, cancel := context.WithCancel(p.ctx)
	s.cancel = cancel
	if err := chromedp.Listen(lctx, s.onEvent); err != nil {
		s.abort()
		return err
	}
	err = p.await(ctx, func(ctx context.Context) error {
		// Chrome sends a frame when the page paints, and a page that
		// does not change may not paint for the whole recording: the
		// video starts from a screenshot.
		shot, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatJpeg, Quality: new(int64(90))})
		if err == nil && len(shot.Data) > 0 {
			s.onFrame(frame{data: shot.Data, at: time.Now()})
		}
		_, err = chromedp.Call(ctx, page.StartScreencast, page.StartScreencastParams{
			Format: page.StartScreencastFormatJpeg, Quality: new(int64(90)), MaxWidth: w, MaxHeight: h, EveryNthFrame: 1,
		})
		return err
	})
	if err != nil {
		s.abort()
		return fmt.Errorf("start the screencast: %w", err)
	}
	s.Started = time.Now()
	go s.run(lctx)
	return nil
}

// abort ends a screencast that failed to start: no file is left.
func (s *Screencast) abort() {
	s.cancel()
	s.stdin.Close()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	os.Remove(s.Path)
}

// onEvent runs in the tab's event loop: it only queues the frame.
func (s *Screencast) onEvent(ev any) {
	f, ok := ev.(*page.EventScreencastFrame)
	if !ok {
		return
	}
	s.onFrame(frame{data: f.Data, session: f.SessionID, ack: true, at: time.Now()})
}

// onFrame queues a frame; it never blocks.
func (s *Screencast) onFrame(f frame) {
	s.mu.Lock()
	s.queue = append(s.queue, f)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run acknowledges the frames and feeds them to ffmpeg until the recording
// ends, then finishes the file.
func (s *Screencast) run(lctx context.Context) {
	enc := &frameWriter{w: s.stdin, start: s.Started}
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, f := range batch {
			if f.ack {
				// Ack first: Chrome holds the next frame until then.
				actx, cancel := context.WithTimeout(lctx, 5*time.Second)
				_, _ = chromedp.Call(actx, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: f.session})
				cancel()
			}
			enc.add(f)
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-s.stop:
			s.finish(lctx, enc)
			return
		case <-s.p.Done():
			s.end(fmt.Sprintf("page %d closed while it recorded", s.p.ID))
			s.finish(lctx, enc)
			return
		}
	}
}

// finish stops Chrome's screencast, writes the last frame until the end,
// and waits for ffmpeg to finish the file.
func (s *Screencast) finish(lctx context.Context, enc *frameWriter) {
	end := time.Now()
	if !s.p.Closed() {
		sctx, cancel := context.WithTimeout(lctx, 5*time.Second)
		_, _ = chromedp.Call(sctx, page.StopScreencast, cdp.Empty{})
		cancel()
	}
	s.cancel()
	s.mu.Lock()
	for _, f := range s.queue {
		if !f.at.After(end) {
			enc.add(f)
		}
	}
	s.queue = nil
	s.mu.Unlock()
	enc.close(end)
	s.stdin.Close()
	waited := make(chan error, 1)
	go func() { waited <- s.cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(screencastFinish):
		_ = s.cmd.Process.Kill()
		<-waited
		err = fmt.Errorf("ffmpeg did not finish the video within %v", screencastFinish)
	}
	switch {
	case enc.distinct == 0:
		err = errors.New("chrome sent no frame of the page, so there is no video")
	case err == nil && enc.err != nil:
		err = fmt.Errorf("feed the frames to ffmpeg: %w", enc.err)
	case err != nil:
		if out := s.stderr.String(); out != "" {
			err = fmt.Errorf("%w: %s", err, out)
		}
		err = fmt.Errorf("ffmpeg failed to encode the video: %w", err)
	}
	if err != nil {
		os.Remove(s.Path) // never a half-written file
	}
	s.mu.Lock()
	s.frames, s.err = enc.distinct, err
	s.mu.Unlock()
	screencasts.Lock()
	if screencasts.of[s.p] == s {
		delete(screencasts.of, s.p)
	}
	screencasts.Unlock()
	close(s.done)
}

// end starts the end of the recording once, whoever asks first.
func (s *Screencast) end(reason string) {
	s.once.Do(func() {
		s.reason = reason
		close(s.stop)
	})
}

// Stop ends the recording and waits until the video is written, or ctx
// ends; the file is finished in the background then. It returns the number
// of distinct frames Chrome sent. A video that could not be written is
// removed and Stop says why.
func (s *Screencast) Stop(ctx context.Context) (frames int, err error) {
	s.end("")
	select {
	case <-s.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frames, s.err
}

// Done is closed when the video is finished or failed, after Stop or when
// the page went away.
func (s *Screencast) Done() <-chan struct{} { return s.done }

// Result tells, once Done is closed, how the recording ended: the distinct
// frames, why it ended by itself ("" when stopped), and the error that left
// no video.
func (s *Screencast) Result() (frames int, reason string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frames, s.reason, s.err
}

// frameWriter writes JPEG frames to ffmpeg at a constant rate: each frame is
// repeated until the next one replaces it.
type frameWriter struct {
	w        io.Writer
	start    time.Time
	last     []byte
	written  int // frames written to ffmpeg
	distinct int
	err      error
}

// add shows f from its arrival on.
func (e *frameWriter) add(f frame) {
	if e.last != nil {
		e.fill(f.at)
	}
	e.last = f.data
	e.distinct++
}

// fill repeats the last frame up to time t.
func (e *frameWriter) fill(t time.Time) {
	target := int(math.Round(t.Sub(e.start).Seconds() * ScreencastFPS))
	for e.written < target && e.err == nil {
		_, e.err = e.w.Write(e.last)
		e.written++
	}
}

// close shows the last frame until end, at least once.
func (e *frameWriter) close(end time.Time) {
	if e.last == nil {
		return
	}
	e.fill(end)
	if e.written == 0 && e.err == nil {
		_, e.err = e.w.Write(e.last)
		e.written++
	}
}
