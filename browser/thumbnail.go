package browser

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// How thumbnails work. The live view (ui/) shows each page small, kept
// fresh while someone looks. Chrome's screencast sends a frame when the
// page paints, and while it runs Chrome copies out every frame the page
// paints: on a page that animates, that costs Chrome several times the
// CPU of the page itself. So Thumbnails takes one frame and stops the
// screencast, waits ThumbnailOptions.Every, and starts it again: a busy
// page costs one small frame per Every, a still page none. Nothing runs
// while no one watches.
//
// A tab's DevTools session has one screencast, and Chrome refuses to
// start a second: a recording (StartScreencast) takes the page's screencast
// from Thumbnails (yieldThumbnails), which sends nothing while it runs and
// starts its own again once it ended. One Thumbnails runs per page at a
// time.

// ThumbnailOptions say how small and how often. The zero value is 320×200,
// JPEG quality 40, at most one frame a second.
type ThumbnailOptions struct {
	MaxWidth, MaxHeight int64
	Quality             int64
	Every               time.Duration
}

// thumbnailCheck is how often Thumbnails looks whether a recording started
// or ended on its page: the recording gives no event of its own.
const thumbnailCheck = time.Second

// thumbnailCommand bounds one screencast command of Thumbnails.
const thumbnailCommand = 5 * time.Second

// thumbnailSilence is how long a started screencast may send nothing
// before Thumbnails starts it again: Chrome sends a frame at once when it
// starts, so a silent one was stopped under it.
const thumbnailSilence = 3 * thumbnailCheck

// ErrThumbnailsActive is returned by Thumbnails for a page that has
// Thumbnails running already.
const ErrThumbnailsActive Error = "this page's thumbnails are taken already"

// thumbnailers are the pages' running Thumbnails.
var thumbnailers = struct {
	sync.Mutex
	of map[*Page]*thumbnailer
}{of: map[*Page]*thumbnailer{}}

// yieldThumbnails stops the page's thumbnail screencast, if one runs, for a
// recording that has reserved the page (screencasts.of): Thumbnails starts
// none while the recording runs.
func (p *Page) yieldThumbnails() {
	thumbnailers.Lock()
	t := thumbnailers.of[p]
	thumbnailers.Unlock()
	if t != nil {
		t.stop()
	}
}

// Thumbnails sends small JPEG frames of the page to send as it paints,
// throttled by o.Every, until ctx ends or the page closes; then it stops
// the screencast it started. It does not take the page's lock: it reads
// what the page shows, as a person looking would, whatever call acts on
// it. It returns an error when the screencast cannot start (the page is
// closed or crashed); send runs on Thumbnails' goroutine.
func (cp Capture) Thumbnails(ctx context.Context, o ThumbnailOptions, send func(jpeg []byte)) error {
	p := cp.p
	o.MaxWidth, o.MaxHeight = cmp.Or(o.MaxWidth, 320), cmp.Or(o.MaxHeight, 200)
	o.Quality, o.Every = cmp.Or(o.Quality, 40), cmp.Or(o.Every, time.Second)
	if err := p.Ready(ctx); err != nil {
		return err
	}
	cctx, cancel := p.Context(ctx)
	defer cancel()
	frames := make(chan *page.EventScreencastFrame, 8)
	if err := chromedp.Listen(cctx, func(ev any) {
		if f, ok := ev.(*page.EventScreencastFrame); ok {
			select {
			case frames <- f:
			default: // Chrome holds its next frame until an ack: never full
			}
		}
	}); err != nil {
		return err
	}
	t, err := cp.newThumbnailer(cctx, o)
	if err != nil {
		return err
	}
	defer t.close()
	tick := time.NewTicker(thumbnailCheck)
	defer tick.Stop()
	for {
		if err := t.startUnlessRecording(); err != nil {
			if cctx.Err() != nil {
				return nil // ctx ended, or the page closed
			}
			return p.explain(ctx, err)
		}
		select {
		case <-cctx.Done():
			return nil
		case <-tick.C:
			t.restartIfSilent()
		case f := <-frames:
			if !t.isCasting() || p.Screencast() != nil {
				continue // the recording's frame: it acknowledges
			}
			send(f.Data)
			_ = t.command(func(ctx context.Context) error {
				_, err := chromedp.Call(ctx, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: f.SessionID})
				return err
			})
			t.stop()
			t.throttle()
			drain(frames)
		}
	}
}

// thumbnailer is one Thumbnails' screencast.
type thumbnailer struct {
	p   *Page
	ctx context.Context
	o   ThumbnailOptions

	// mu orders its start and stop with a recording's yieldThumbnails.
	mu      sync.Mutex
	casting bool      // its screencast runs
	since   time.Time // when it started
}

// newThumbnailer registers the page's Thumbnails, the only one.
func (cp Capture) newThumbnailer(ctx context.Context, o ThumbnailOptions) (*thumbnailer, error) {
	p := cp.p
	thumbnailers.Lock()
	defer thumbnailers.Unlock()
	if thumbnailers.of[p] != nil {
		return nil, ErrThumbnailsActive
	}
	t := &thumbnailer{p: p, ctx: ctx, o: o}
	thumbnailers.of[p] = t
	return t, nil
}

// close stops the screencast and forgets the thumbnailer.
func (t *thumbnailer) close() {
	thumbnailers.Lock()
	delete(thumbnailers.of, t.p)
	thumbnailers.Unlock()
	t.stop()
}

// isCasting reports whether its screencast runs.
func (t *thumbnailer) isCasting() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.casting
}

// startUnlessRecording starts the screencast unless it runs, or a
// recording has the page's.
func (t *thumbnailer) startUnlessRecording() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.casting || t.p.Screencast() != nil {
		return nil
	}
	err := t.command(func(ctx context.Context) error {
		_, err := chromedp.Call(ctx, page.StartScreencast, page.StartScreencastParams{Format: page.StartScreencastFormatJpeg,
			Quality: &t.o.Quality, MaxWidth: t.o.MaxWidth, MaxHeight: t.o.MaxHeight, EveryNthFrame: 1})
		return err
	})
	t.casting, t.since = err == nil, time.Now()
	return err
}

// restartIfSilent stops a screencast that sent nothing for
// thumbnailSilence, for the loop to start it again.
func (t *thumbnailer) restartIfSilent() {
	if t.isCasting() && time.Since(t.startedAt()) > thumbnailSilence {
		t.stop()
	}
}

// startedAt is when its screencast started.
func (t *thumbnailer) startedAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.since
}

// throttle waits o.Every before the frame is acknowledged, or less when
// the page goes or no one watches any longer.
func (t *thumbnailer) throttle() {
	timer := time.NewTimer(t.o.Every)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.ctx.Done():
	}
}

// stop ends its screencast, if it runs.
func (t *thumbnailer) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.casting || t.p.Closed() {
		t.casting = false
		return
	}
	t.casting = false
	ctx, cancel := t.p.Context(context.Background())
	defer cancel()
	ctx, cancelCmd := context.WithTimeout(ctx, thumbnailCommand)
	defer cancelCmd()
	_, _ = chromedp.Call(ctx, page.StopScreencast, cdp.Empty{})
}

// drain drops the frames of a screencast that was stopped.
func drain(frames <-chan *page.EventScreencastFrame) {
	for {
		select {
		case <-frames:
		default:
			return
		}
	}
}

// command runs one screencast command, bounded.
func (t *thumbnailer) command(fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(t.ctx, thumbnailCommand)
	defer cancel()
	return fn(ctx)
}
