package ui

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/pagemux/pagemux/tools"
)

// state is what one push says: the whole picture, small enough to send
// whole (a few pages, a few locks, the calls of the window).
type state struct {
	// Now is the server's clock (Unix ms), for the timeline's right edge.
	Now    int64             `json:"now"`
	Window int64             `json:"windowMs"`
	Agents []agentState      `json:"agents"`
	Pages  []pageState       `json:"pages"`
	Locks  []tools.LockState `json:"locks"`
	Calls  []*call           `json:"calls"`
	// Frames counts the thumbnail frames received, ever; Thumbnails the
	// pages whose screencasts run now (until each stopped), Viewers the
	// open streams: both 0 while no one looks.
	Frames     uint64 `json:"frames"`
	Thumbnails int    `json:"thumbnails"`
	Viewers    int    `json:"viewers"`
	// Replica names this process among the replicas; "" without etcd.
	Replica string `json:"replica,omitempty"`
	// Records says the session records are served at /ui/records/.
	Records bool `json:"records"`
}

// agentState is one agent: "running" (a call holds its locks), "waiting"
// (a call waits for locks, none runs) or "idle".
type agentState struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	InFlight int    `json:"inFlight"`
	Calls    int    `json:"calls"` // in the window, in flight included
	Pages    []int  `json:"pages"`
}

// pageState is one page; Thumb numbers its latest thumbnail (0: none yet),
// served at /ui/thumb/ID.
type pageState struct {
	tools.PageView
	Thumb uint64 `json:"thumb,omitempty"`
}

// build makes the state now. It reads the Source (locks, pages) outside
// v.mu.
func (v *View) build(ctx context.Context) state {
	st := state{Now: time.Now().UnixMilli(), Window: v.opts.Window.Milliseconds(), Records: v.opts.Records != nil, Replica: v.opts.Replica,
		Locks: []tools.LockState{}, Agents: []agentState{}, Pages: []pageState{}}
	var views []tools.PageView
	if src := v.src.Load(); src != nil {
		if locks := (*src).LocksFor(ctx); locks != nil {
			st.Locks = locks
		}
		views = (*src).PagesView()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.trimLocked(time.Now())
	st.Calls = make([]*call, 0, len(v.ended)+len(v.calls))
	for _, c := range v.ended {
		cp := *c
		st.Calls = append(st.Calls, &cp)
	}
	for _, c := range v.calls {
		cp := *c
		st.Calls = append(st.Calls, &cp)
	}
	slices.SortFunc(st.Calls, func(a, b *call) int { return cmp.Compare(a.ID, b.ID) })
	for _, p := range views {
		ps := pageState{PageView: p}
		if t := v.thumbs[p.ID]; t != nil {
			ps.Thumb = t.version
		}
		st.Pages = append(st.Pages, ps)
	}
	st.Agents = agentsOf(st.Calls, views)
	st.Frames, st.Viewers, st.Thumbnails = v.frames.Load(), len(v.viewers), int(v.running.Load())
	return st
}

// agentsOf gathers the agents of the calls in the window and of the
// pages' owners, by id.
func agentsOf(calls []*call, pages []tools.PageView) []agentState {
	by := map[string]*agentState{}
	get := func(id string) *agentState {
		a, ok := by[id]
		if !ok {
			a = &agentState{ID: id, State: "idle", Pages: []int{}}
			by[id] = a
		}
		return a
	}
	for _, c := range calls {
		a := get(c.Agent)
		a.Calls++
		if c.Ended != 0 {
			continue
		}
		a.InFlight++
		switch {
		case c.Started != 0:
			a.State = "running"
		case a.State == "idle":
			a.State = "waiting"
		}
	}
	for _, p := range pages {
		if p.Owner != "" {
			a := get(p.Owner)
			a.Pages = append(a.Pages, p.ID)
		}
	}
	out := make([]agentState, 0, len(by))
	for _, a := range by {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b agentState) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
