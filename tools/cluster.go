package tools

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/cluster"
	"github.com/pagemux/pagemux/pagelock"
)

// This file shares a call's locks with the other pagemux processes that
// drive the same browser, through etcd (cluster.Locks, issue 17). A call
// first takes its place in this process's queues (pagelock keeps the wire
// order), then, holding them, the same locks in etcd under names every
// process spells alike: the browser's Identity with the CDP target id of the
// page, or with "global" and the browser-wide resources. Its commands to
// Chrome are fenced with the lease (browser.FencePage), the call is stopped
// when the lease is lost, and a result made after the loss is void.

// Cluster configures the locks a Server shares with other processes.
type Cluster struct {
	// Locks are the etcd locks of this process.
	Locks *cluster.Locks
	// FallbackLocal serves on this process's locks alone while etcd is
	// unavailable, with a warning at each switch, instead of failing the
	// calls. Unsafe when other processes drive the browser.
	FallbackLocal bool
	// OnAcquire, if set, is told how long each call took to get its locks
	// in etcd, and how that went: ok, unavailable, timeout, cancelled or
	// error. For metrics.
	OnAcquire func(took time.Duration, outcome string)
}

// clusterState is what the Server keeps of Cluster.
type clusterState struct {
	Cluster
	local atomic.Bool // serving on local locks alone (FallbackLocal)
}

// clusterHold is a call's hold on its locks in etcd; nil when it has none.
type clusterHold struct {
	held    *cluster.Held
	what    string // "the lock of page 3", for errors
	unfence func()
	done    chan struct{} // closed at release: ends the watch of held.Lost
	cancel  context.CancelCauseFunc
}

// holdInCluster takes, in etcd, the locks of a call that holds keys here,
// waiting at most --lock-timeout. It returns ctx ended when the lease is
// lost, until release. A call with no keys, or a server without Cluster, holds nothing.
func (s *Server) holdInCluster(ctx context.Context, t tool, page *browser.Page, keys []pagelock.Key) (context.Context, *clusterHold, error) {
	c := s.cluster
	if c == nil || len(keys) == 0 {
		return ctx, nil, nil
	}
	id, err := s.browser.Identity(ctx)
	if err != nil {
		return ctx, nil, err
	}
	names := s.clusterNames(id, page, keys)
	h := cluster.Holder{Agent: lockAgent(ctx), Tool: t.def.Name}
	what := "its lock"
	if page != nil {
		h.Page = strconv.Itoa(page.ID)
		what = fmt.Sprintf("the lock of page %d", page.ID)
	}
	actx := ctx
	if d := s.locks.Timeout(); d > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	start := time.Now()
	held, err := c.Locks.Acquire(actx, names, h)
	if c.OnAcquire != nil {
		c.OnAcquire(time.Since(start), acquireOutcome(ctx, err))
	}
	if err != nil {
		if c.FallbackLocal && errors.Is(err, cluster.ErrUnavailable) {
			if !c.local.Swap(true) {
				s.log.Warn("etcd is unavailable: serving on this process's locks alone (--etcd-fallback=local); calls of other pagemux processes on the same tabs may now overlap", "error", err)
			}
			return ctx, nil, nil
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return ctx, nil, fmt.Errorf("timed out after %s waiting in etcd for %s, which another pagemux process holds; try again later, or raise --lock-timeout (%v)", s.locks.Timeout(), what, err)
		}
		return ctx, nil, err
	}
	if c.local.Swap(false) {
		s.log.Warn("etcd is back: locks are shared with the other pagemux processes again")
	}
	hold := &clusterHold{held: held, unfence: func() {}, what: what}
	switch {
	case s.locks.Mode() == pagelock.Global:
		hold.unfence = s.browser.FenceAll(held.Check)
	case page != nil:
		unfence, err := s.browser.FencePage(ctx, page, held.Check)
		if err != nil {
			hold.release(s)
			return ctx, nil, err
		}
		hold.unfence = unfence
	}
	lctx, cancel := context.WithCancelCause(ctx)
	hold.cancel, hold.done = cancel, make(chan struct{})
	go func() {
		select {
		case <-held.Lost():
			cancel(hold.lost())
		case <-hold.done:
		}
	}()
	return lctx, hold, nil
}

// clusterNames are the etcd lock names of keys: one lock per browser (one
// per pool: id) in global mode, else the page's target and the browser-wide
// resources, of the page's own Chrome in a pool.
func (s *Server) clusterNames(id string, page *browser.Page, keys []pagelock.Key) []string {
	if s.locks.Mode() == pagelock.Global {
		return []string{id + "/global"}
	}
	if page != nil {
		id = page.BrowserIdentity()
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		if page != nil && k == pagelock.PageKey(page.ID) {
			names = append(names, id+"/target/"+string(page.TargetID))
			continue
		}
		if r, ok := strings.CutPrefix(string(k), "rule:"); ok {
			// An action rule's resource is the same whatever Chrome the
			// call drives: a shop account is one across a pool.
			names = append(names, "rules/"+url.PathEscape(r))
			continue
		}
		names = append(names, id+"/"+string(k.Resource()))
	}
	return names
}

// release gives the locks back in etcd; nil-safe.
func (h *clusterHold) release(s *Server) {
	if h == nil {
		return
	}
	if h.done != nil {
		close(h.done)
		h.cancel(context.Canceled)
	}
	h.unfence()
	// In the background: the answer need not wait for etcd, and the next
	// call here that wants the lock waits for the key's deletion in etcd
	// as any other process does. Keys etcd does not delete now go with the
	// lease (cluster retries them meanwhile).
	go func() {
		if err := h.held.Release(context.Background()); err != nil && !errors.Is(err, cluster.ErrLockLost) {
			s.log.Warn("releasing locks in etcd", "locks", h.held.Names(), "error", err)
		}
	}()
}

// void is the error that replaces the result of a call whose lock was lost
// while it ran, nil if it held on; nil-safe.
func (h *clusterHold) void(s *Server) error {
	if h == nil || h.held.Check() == nil {
		return nil
	}
	return h.lost()
}

// lost says what a lost lease means for the call.
func (h *clusterHold) lost() error {
	return fmt.Errorf("%s in etcd was lost while the call ran, so its result is void: another pagemux process may have used the page meanwhile. Check that etcd is reachable from here, then call again (%w)", h.what, h.held.Check())
}

// acquireOutcome names how an Acquire went, for OnAcquire.
func acquireOutcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, cluster.ErrUnavailable):
		return "unavailable"
	case ctx.Err() != nil:
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}

// ClusterFallback reports whether the server now serves on its own locks
// alone because etcd is unavailable (Cluster.FallbackLocal).
func (s *Server) ClusterFallback() bool {
	return s.cluster != nil && s.cluster.local.Load()
}

// clusterLocks lists the locks in etcd of the browser this process drives,
// with their holders and queues across every process, as LocksFor shows
// them to agent a (redact: as another agent than a).
func (s *Server) clusterLocks(ctx context.Context, a agents.Agent, redact bool) []LockState {
	if s.cluster == nil {
		return nil
	}
	ids, err := s.browser.Identities(ctx)
	if err != nil {
		return nil
	}
	qs, err := s.cluster.Locks.Holders(ctx)
	if err != nil {
		return []LockState{{Lock: "etcd", Holder: err.Error(), Waiting: []string{}, Cluster: true}}
	}
	byTarget := map[string]int{}
	for _, p := range s.browser.Pages() {
		byTarget[string(p.TargetID)] = p.ID
	}
	me := lockAgent(ctx)
	var out []LockState
	for _, q := range qs {
		id, rest, _ := strings.Cut(q.Name, "/")
		if !slices.Contains(ids, id) || len(q.Entries) == 0 {
			continue // another browser's
		}
		name := pagelock.Key(rest).String()
		if tid, ok := strings.CutPrefix(rest, "target/"); ok {
			if n, ok := byTarget[tid]; ok {
				name = fmt.Sprintf("page %d", n)
			} else {
				name = "a tab not open here (target " + tid + ")"
			}
		}
		if redact && !s.seesLock(a, name) {
			continue
		}
		ls := LockState{Lock: name, Cluster: true, Waiting: []string{}}
		for i, e := range q.Entries {
			who := e.Holder.Tool
			if e.Holder.Page != "" {
				who += " on page " + e.Holder.Page + " of"
			}
			who += " process " + e.Holder.Process
			switch {
			case !redact && e.Holder.Agent != "":
				who += " for agent " + e.Holder.Agent
			case redact && e.Holder.Agent != me:
				who = "another agent"
			}
			if i == 0 {
				ls.Holder = who // since when, etcd does not say
			} else {
				ls.Waiting = append(ls.Waiting, who)
			}
		}
		out = append(out, ls)
	}
	return out
}
