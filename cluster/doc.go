// Package cluster holds pagemux's locks in etcd, so that several pagemux
// processes (stdio servers started by different MCP clients, or --http
// replicas on several machines) sharing browsers take turns on each tab as
// the locks of one process do (issue 17, its first stage).
//
// # How pagemux is meant to use it
//
// One Locks per process, made at start from the process's etcd client:
//
//	locks := cluster.New(cli, cluster.Options{Prefix: "/pagemux/", TTL: 10 * time.Second, Process: "replica-a", Logger: log})
//	defer locks.Close(ctx) // revokes the lease: this process's locks are freed at once
//
// A tool call first takes its place in pagelock's in-process queue (which
// keeps each process's wire order), then, still holding it, acquires the
// same locks here, under names that every process spells alike: the
// browser's identity and the CDP target id for a page, never pagemux's
// small page id, and the browser-wide resources:
//
//	held, err := locks.Acquire(ctx, []string{browserID + "/target/" + targetID, browserID + "/audit"},
//		cluster.Holder{Agent: agent, Tool: "lighthouse_audit", Page: "3"})
//	if err != nil { ... } // ctx is --lock-timeout; errors.Is(err, cluster.ErrUnavailable) says etcd is to blame
//	defer held.Release(context.WithoutCancel(ctx))
//
// Before every CDP command it sends under the lock, the call checks
//
//	if err := held.Check(); err != nil { return err } // errors.Is(err, cluster.ErrLockLost)
//
// which costs a clock read and three atomic loads (about 30 ns), no round
// trip; a result produced after a failed Check must not be returned as a
// success. Lost() is a channel that closes when Check starts failing
// (within a timer's precision), for a call that waits on Chrome and should
// stop at once. held.Token(name) is the fencing token
// (the key's create revision) for logs and for any store that can check
// one. Locks.Holders lists every lock's holder and queue across the
// cluster, for /locks and pagemux://locks.
//
// # What it does
//
// Each Acquire puts one new key per lock name under the process's lease,
// PREFIX/lock/NAME/LEASE-SEQ, and waits for the deletion of every key of
// that name with a lower create revision: FIFO by revision, as etcd's
// concurrency.Mutex does. It does not use concurrency.Mutex itself, whose
// key is the lease's, so that two calls of one process on one lock would
// share a key and one's stale Unlock would free the other's lock (etcd
// issue #22082); nor concurrency.Session, which does not tell when the
// lease was last renewed, which fencing needs. Several names in one call
// are taken one after the other in sorted order, so two calls can never
// wait on each other in a cycle. Every failure path of Acquire deletes the
// keys it put (at once, in the background, so that the error is returned
// within the caller's context); Release deletes exactly its own keys, by
// key and create revision. A key whose deletion failed (etcd unreachable) is retried in
// the background until etcd answers or the lease ends, so no key is left to
// block a lock for good.
//
// The lease (one per process, kept alive every TTL/3) is known live until
// the time the last answered keepalive was SENT plus the TTL it granted:
// etcd renewed it no sooner than that, so it cannot expire before. Past
// that time, or once etcd says the lease is gone, the lease is lost for
// good: every lock held under it fails Check with ErrLockLost, its Lost
// channel closes, and the next Acquire grants a new lease. Because etcd
// expires a lease only after its TTL from its last renewal, a process cut
// off from etcd sees its locks lost before another process can be granted
// them, as long as this machine's clock and the etcd leader's run at the
// same rate (they need not agree on the time). What it cannot guarantee is
// the window between a passing Check and the command that follows it
// reaching Chrome, which cannot check a token itself.
//
// # What else it keeps in etcd
//
//   - Page ids (pages.go): the small id every process shows a tab under,
//     from one counter per browser (or per pool), keyed by the browser's
//     identity and the tab's target id, and the browser contexts every
//     process agrees on.
//   - Mirror (mirror.go): a watched set of small records each process
//     keeps a copy of, such as the agents' selected and owned pages.
//   - The action rules' once-only records (once.go) and leases
//     (rulelease.go): a retry through another replica answers the first
//     call's result; a resource an agent keeps between its calls is one
//     agent's across every replica.
//
// # What it does not do
//
// It knows nothing of Chrome, MCP or what a page is: lock names, page and
// browser identities and holder metadata are strings from the caller. It
// does not keep any process's own arrival order (pagelock does), nor fall
// back to in-process locks when etcd is unavailable (the caller chooses
// that). It writes no consensus of its own: etcd's leases and revisions do
// the work.
package cluster
