package tools

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/cluster"
)

// This file keeps the agents' pages and selections alike in every replica
// that serves one attached browser through etcd (issue 17): who owns each
// page and which page each agent has selected are two etcd sets, mirrored
// by cluster.Mirror and keyed by the browser's identity, which every
// replica spells alike, as it does the page ids (browser.SetPageIDs). Each
// call first catches up with what the other replicas wrote (one etcd
// read), so that an agent whose last request went to another replica, or
// that reconnects after its replica died, finds its pages and its
// selection.

// replicaSets is the agents' set in etcd, made on the first call, once the
// browser's identity is known: IDENTITY/owner/PAGE = the agent that owns
// the page, IDENTITY/selected/AGENT = the agent's selected page,
// IDENTITY/newest/AGENT = the agent's newest MCP session, which takes over
// its older sessions on every replica (generations, as on one).
type replicaSets struct {
	s *Server

	mu       sync.Mutex
	identity string
	set      *cluster.Mirror
}

// replicaWrite bounds the write of one change.
const replicaWrite = 5 * time.Second

// catchUp makes the call's view of the agents current: it starts the
// mirror if needed, then waits until every change the other replicas made
// before now is here. A server without etcd, without agents, or on a
// browser of its own catches up with nothing. With --etcd-fallback=local a
// failure is logged and the call goes on with what this replica knows.
func (rs *replicaSets) catchUp(ctx context.Context) error {
	if rs == nil {
		return nil
	}
	identity, err := rs.s.browser.Identity(ctx)
	if err != nil {
		return err
	}
	rs.mu.Lock()
	if rs.identity != identity {
		// A new browser (the attached one restarted): its pages are new.
		if rs.set != nil {
			rs.set.Close()
		}
		rs.identity = identity
		rs.set = rs.s.cluster.Locks.Mirror(cluster.AgentsSet, func(key, value string) { rs.apply(identity, key, value) })
	}
	set := rs.set
	rs.mu.Unlock()
	err = set.CatchUp(ctx)
	if err != nil && rs.s.cluster.FallbackLocal {
		rs.s.log.Warn("etcd: serving with this replica's view of the agents' pages", "error", err)
		return nil
	}
	return err
}

// apply takes one change of the set, of the browser identity.
func (rs *replicaSets) apply(identity, key, value string) {
	id, rest, _ := strings.Cut(key, "/")
	kind, name, _ := strings.Cut(rest, "/")
	if id != identity {
		return
	}
	switch kind {
	case "owner":
		if page, err := strconv.Atoi(name); err == nil {
			rs.s.agents.ApplyOwner(page, value)
		}
	case "selected":
		page, _ := strconv.Atoi(value)
		rs.s.agents.ApplySelected(name, page)
	case "newest":
		if value != "" {
			rs.s.agents.ApplyNewest(name, value)
		}
	}
}

// Owner and Selected write this replica's changes (agents.Replicas).
func (rs *replicaSets) Owner(page int, agent string) {
	rs.write("owner/"+strconv.Itoa(page), agent)
}

func (rs *replicaSets) Selected(agent string, page int) {
	value := ""
	if page != 0 {
		value = strconv.Itoa(page)
	}
	rs.write("selected/"+agent, value)
}

// Arrived writes that session is agent's newest, which takes over its
// older sessions on the other replicas.
func (rs *replicaSets) Arrived(agent, session string) {
	rs.write("newest/"+agent, session)
}

// write sets one key of the set; a failure is logged: this replica goes
// on with its own view, and the others miss the change until the next.
func (rs *replicaSets) write(key, value string) {
	rs.mu.Lock()
	set, identity := rs.set, rs.identity
	rs.mu.Unlock()
	if set == nil {
		return // no call caught up yet, so this is no call's change
	}
	ctx, cancel := context.WithTimeout(context.Background(), replicaWrite)
	defer cancel()
	if err := set.Set(ctx, identity+"/"+key, value); err != nil {
		rs.s.log.Warn("etcd: the other replicas miss a change of an agent's pages", "key", key, "error", err)
	}
}

// close stops the mirror.
func (rs *replicaSets) close() {
	if rs == nil {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.set != nil {
		rs.set.Close()
	}
}

var _ agents.Replicas = (*replicaSets)(nil)
