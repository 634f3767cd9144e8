package browser

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// counts are running totals for metrics.
type counts struct {
	launches, crashes, browserExits atomic.Int64
}

// Counts returns how many times Chrome started (or was attached to), how
// many tabs' renderers crashed, and how many times Chrome went away while
// pagemux still used it.
func (b *Browser) Counts() (launches, crashes, exits int64) {
	return b.counts.launches.Load(), b.counts.crashes.Load(), b.counts.browserExits.Load()
}

// Status says whether Chrome is up, for a health check: "up" once a start
// succeeded and Chrome has not gone away since; in a pool, while one of its
// Chromes is, with each one's state in detail. It does not start Chrome and
// does not talk to it.
func (b *Browser) Status() (up bool, detail string) {
	b.mu.Lock()
	launches := make([]*launch, len(b.members))
	for i, m := range b.members {
		launches[i] = m.launch
	}
	b.mu.Unlock()
	if len(launches) == 1 {
		return launches[0].status()
	}
	var states []string
	running := 0
	for i, l := range launches {
		ok, d := l.status()
		if ok {
			running++
		}
		states = append(states, b.members[i].url+": "+d)
	}
	return running > 0, fmt.Sprintf("%d of the pool's %d browsers running (%s)", running, len(launches), strings.Join(states, "; "))
}

// status is Status for one launch; l may be nil, before the first start.
func (l *launch) status() (up bool, detail string) {
	switch {
	case l == nil:
		return false, "not started yet: Chrome starts on the first tool call"
	case !isDone(l.done):
		return false, "starting"
	case l.err != nil:
		return false, "the last start failed: " + l.err.Error()
	case l.gone():
		return false, "Chrome went away; the next tool call starts a new one"
	}
	return true, "running"
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
