package ui

import (
	"context"
	"errors"
	"time"

	"github.com/pagemux/pagemux/tools"
)

// thumb is one page's thumbnails while someone looks.
type thumb struct {
	cancel  context.CancelFunc
	jpeg    []byte
	version uint64    // of jpeg: the View's frame count when it came
	ended   bool      // Thumbnails returned (the page went, or failed)
	retryAt time.Time // when an ended one may start again
}

// thumbRetry is how long after its thumbnails failed a page is tried again.
const thumbRetry = 5 * time.Second

// syncThumbs starts the thumbnails of the pages that have none running,
// and stops those of pages that went, under ctx (the push loop's).
func (v *View) syncThumbs(ctx context.Context, pages []pageState) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	open := map[int]bool{}
	for _, p := range pages {
		open[p.ID] = true
		t := v.thumbs[p.ID]
		if t != nil && (!t.ended || time.Now().Before(t.retryAt)) {
			continue
		}
		if t == nil {
			t = &thumb{}
			v.thumbs[p.ID] = t
		}
		if t.cancel != nil {
			t.cancel() // the ended run's context, or it stays in ctx's children
		}
		tctx, cancel := context.WithCancel(ctx)
		t.cancel, t.ended = cancel, false
		v.running.Add(1)
		go v.runThumb(tctx, p.PageView, t)
	}
	for id, t := range v.thumbs {
		if !open[id] {
			t.cancel()
			delete(v.thumbs, id)
		}
	}
}

// runThumb keeps t fresh with page's frames until ctx ends or the page
// goes.
func (v *View) runThumb(ctx context.Context, page tools.PageView, t *thumb) {
	defer v.running.Add(-1)
	err := page.Page.Capture().Thumbnails(ctx, v.opts.Thumbnails, func(jpeg []byte) {
		n := v.frames.Add(1)
		v.mu.Lock()
		t.jpeg, t.version = jpeg, n
		v.mu.Unlock()
		v.markDirty()
	})
	if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		v.log.Debug("live view: no thumbnails of a page", "page", page.ID, "error", err)
	}
	v.mu.Lock()
	t.ended, t.retryAt = true, time.Now().Add(thumbRetry)
	v.mu.Unlock()
}

// thumbnail returns the latest thumbnail of page, nil for none.
func (v *View) thumbnail(page int) []byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	if t := v.thumbs[page]; t != nil {
		return t.jpeg
	}
	return nil
}
