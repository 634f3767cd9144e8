package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// viewer is one open stream: it gets the latest push, older ones dropped.
type viewer struct {
	latest chan []byte   // capacity 1: the newest state not yet written
	gone   chan struct{} // closed by Close
	pushed bool          // it was given a state; under View.mu
}

// keepAlive is how often a quiet stream gets a comment, so that proxies
// and the browser keep it open.
const keepAlive = 15 * time.Second

// serveEvents streams the state as server-sent events ("state"), one each
// time it changes, at most one per Options.Push, for as long as the client
// stays. The first viewer starts the push loop and the thumbnails; the
// last one's leaving stops them.
func (v *View) serveEvents(w http.ResponseWriter, r *http.Request) {
	vw, ok := v.join()
	if !ok {
		http.Error(w, "the live view is closed", http.StatusServiceUnavailable)
		return
	}
	defer v.leave(vw)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-vw.gone:
			return
		case b := <-vw.latest:
			_, err = fmt.Fprintf(w, "event: state\ndata: %s\n\n", b)
		case <-tick.C:
			_, err = fmt.Fprint(w, ": keep-alive\n\n")
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// join adds a viewer, starting the push loop for the first.
func (v *View) join() (*viewer, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil, false
	}
	vw := &viewer{latest: make(chan []byte, 1), gone: make(chan struct{})}
	v.viewers[vw] = struct{}{}
	if v.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		v.stop = cancel
		go v.pushLoop(ctx)
	} else {
		v.markDirty() // the newcomer needs a first push
	}
	v.log.Debug("live view: a viewer joined", "viewers", len(v.viewers))
	return vw, true
}

// leave removes a viewer; the last one's leaving stops the push loop and
// the thumbnails.
func (v *View) leave(vw *viewer) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.viewers[vw]; !ok {
		return
	}
	delete(v.viewers, vw)
	if len(v.viewers) == 0 {
		v.stopLocked()
	}
	v.log.Debug("live view: a viewer left", "viewers", len(v.viewers))
}

// stopLocked ends the push loop and every thumbnail.
func (v *View) stopLocked() {
	if v.stop != nil {
		v.stop()
		v.stop = nil
	}
	for id, t := range v.thumbs {
		t.cancel()
		delete(v.thumbs, id)
	}
}

// pushLoop pushes the state to every viewer when a call changed it, and
// every refresh anyway, at most once per Options.Push, until ctx ends. A
// push whose state is the last one's is not sent.
func (v *View) pushLoop(ctx context.Context) {
	var last []byte
	lastAt := time.Time{}
	tick := time.NewTicker(v.opts.Push)
	defer tick.Stop()
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case <-v.dirty:
		default:
			if !first && time.Since(lastAt) < refresh {
				continue
			}
		}
		first = false
		lastAt = time.Now()
		st := v.build(ctx)
		v.syncThumbs(ctx, st.Pages)
		st.Now = 0 // not a change by itself
		b, err := json.Marshal(st)
		if err != nil {
			v.log.Error("live view: encode the state", "error", err)
			continue
		}
		newcomer := v.hasNewcomer()
		if bytes.Equal(b, last) && !newcomer {
			continue
		}
		last = b
		// The same JSON with the clock: "now" is its first field.
		v.broadcast(append(fmt.Appendf(nil, `{"now":%d,`, time.Now().UnixMilli()), b[len(`{"now":0,`):]...))
	}
}

// hasNewcomer reports whether a viewer has had no push yet.
func (v *View) hasNewcomer() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for vw := range v.viewers {
		if !vw.pushed {
			return true
		}
	}
	return false
}

// broadcast hands b to every viewer, replacing what it has not written.
func (v *View) broadcast(b []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for vw := range v.viewers {
		vw.pushed = true
		select {
		case <-vw.latest:
		default:
		}
		vw.latest <- b
	}
}

// writeJSON writes x as JSON.
func writeJSON(w http.ResponseWriter, x any) {
	_ = json.NewEncoder(w).Encode(x)
}
