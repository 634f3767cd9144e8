package browser

import "time"

// CloseIdle quits the Chrome pagemux launched, as Close does, and leaves
// the Browser ready to start a new one on the next Start: what
// --browser-idle does to a Chrome no call used for a while. Its pages go
// away with ClosedIdle as their reason, their temporary profile with them.
// It does nothing, and returns false, on a browser pagemux attached to
// (which it never closes), on a pool, while Chrome starts, and when none
// runs. The caller makes sure that no call runs meanwhile; it returns once
// Chrome exited and its pages are gone (about a second at most).
func (b *Browser) CloseIdle() bool {
	if b.cfg.Attaches() || len(b.members) != 1 {
		return false
	}
	b.mu.Lock()
	l := b.members[0].launch
	if b.closed || l == nil || !l.ready() || l.chrome == nil {
		b.mu.Unlock()
		return false
	}
	var pages []*Page
	for _, p := range b.byTarget {
		if p.launch == l {
			pages = append(pages, p)
		}
	}
	b.mu.Unlock()
	for _, p := range pages {
		p.setWhy(ClosedIdle) // the first reason stands: browserGone's comes later
	}
	b.log.Info("closing chrome: no call for --browser-idle; the next call starts it again", "pages", len(pages))
	l.chrome.quit()
	l.cancel()
	<-l.dead
	// The pages close as browserGone gets to them; a bound all the same,
	// as the caller holds back every call meanwhile.
	bound := time.NewTimer(idleCloseWait)
	defer bound.Stop()
	for _, p := range pages {
		select {
		case <-p.closed:
		case <-bound.C:
			b.log.Warn("pages of the chrome closed for idleness still open", "wait", idleCloseWait)
			return true
		}
	}
	return true
}

// idleCloseWait bounds CloseIdle's wait for the pages to be gone.
const idleCloseWait = 5 * time.Second

// Running reports whether a Chrome of the browser runs now: started and
// not gone.
func (b *Browser) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.members {
		if m.launch != nil && m.launch.ready() {
			return true
		}
	}
	return false
}
