package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Page ids. Every process driving one browser must show the same tab under
// the same small id (page 3 in one process is page 3 in all), so the id of a
// tab is kept in etcd, under the browser's identity and the tab's CDP target
// id, and handed out from one counter per browser:
//
//	PREFIX/page/BROWSER/TARGET  = the tab's id
//	PREFIX/pageseq/BROWSER      = the last id handed out
//	PREFIX/pageseq/~pool        = the same, for every browser (Options.OneCounter)
//
// The first process to ask for a tab's id takes the next one, in one
// transaction that also checks nobody gave the tab an id meanwhile; any
// other gets that one. The keys have no lease: a tab outlives the process
// that first saw it, and its id must stay. ForgetPage deletes a tab's key
// once it is gone; each process that sees it go does, which is harmless.

// PageID returns the id of the tab target of browser, the same in every
// process that asks: the one already given, or the next of the browser's
// counter. Ids count from 1 and are never given twice for one browser.
func (l *Locks) PageID(ctx context.Context, browser, target string) (int, error) {
	start := time.Now()
	key := l.opts.Prefix + "page/" + browser + "/" + target
	seq := l.opts.Prefix + "pageseq/" + browser
	if l.opts.OneCounter {
		seq = l.opts.Prefix + "pageseq/" + poolCounter
	}
	for {
		rctx, cancel := l.requestContext(ctx)
		// One round trip in the common cases: the id is known, or the
		// counter is read to take the next.
		res, err := l.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.Version(key), "=", 0)).
			Then(clientv3.OpGet(seq)).
			Else(clientv3.OpGet(key)).
			Commit()
		cancel()
		if err != nil {
			return 0, l.unavailable(ctx, "page id of tab "+target, start, err)
		}
		if !res.Succeeded {
			return parseID(res.Responses[0].GetResponseRange().Kvs[0].Value, key)
		}
		next, rev := 1, int64(0)
		if kvs := res.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			last, err := parseID(kvs[0].Value, seq)
			if err != nil {
				return 0, err
			}
			next, rev = last+1, kvs[0].ModRevision
		}
		v := strconv.Itoa(next)
		rctx, cancel = l.requestContext(ctx)
		res, err = l.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.Version(key), "=", 0), clientv3.Compare(clientv3.ModRevision(seq), "=", rev)).
			Then(clientv3.OpPut(seq, v), clientv3.OpPut(key, v)).
			Else(clientv3.OpGet(key)).
			Commit()
		cancel()
		if err != nil {
			return 0, l.unavailable(ctx, "page id of tab "+target, start, err)
		}
		if res.Succeeded {
			return next, nil
		}
		if kvs := res.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			return parseID(kvs[0].Value, key) // another process gave it one
		}
		// Another tab took the counter's next id first: read it again.
	}
}

// poolCounter names the counter of Options.OneCounter: "~" is in no
// browser's identity, which is an id of hex digits and dashes.
const poolCounter = "~pool"

// RegistrySize counts what the shared page registry holds now: the tabs
// with an id (PageID), of every browser, and the agents the replicas share
// (an agent owns a page, has one selected, or has a session), of the agents
// set that tools mirrors. It reads etcd, two requests.
func (l *Locks) RegistrySize(ctx context.Context) (pages, agents int, err error) {
	start := time.Now()
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	res, err := l.cli.Get(rctx, l.opts.Prefix+"page/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, 0, l.unavailable(ctx, "counting the page registry", start, err)
	}
	pages = int(res.Count)
	set := l.opts.Prefix + AgentsSet + "/"
	if res, err = l.cli.Get(rctx, set, clientv3.WithPrefix()); err != nil {
		return 0, 0, l.unavailable(ctx, "counting the agents", start, err)
	}
	names := map[string]bool{}
	for _, kv := range res.Kvs {
		// IDENTITY/owner/PAGE = AGENT, IDENTITY/selected/AGENT, IDENTITY/newest/AGENT
		parts := strings.SplitN(strings.TrimPrefix(string(kv.Key), set), "/", 3)
		switch {
		case len(parts) != 3:
		case parts[1] == "owner":
			names[string(kv.Value)] = true
		case parts[1] == "selected", parts[1] == "newest":
			names[parts[2]] = true
		}
	}
	return pages, len(names), nil
}

// AgentsSet is the name of the set (Mirror) in which the replicas share
// the agents' pages, selections and sessions.
const AgentsSet = "agents"

// ForgetPage deletes the id of a tab that is gone. Its id is not given
// again: the counter only grows.
func (l *Locks) ForgetPage(ctx context.Context, browser, target string) error {
	start := time.Now()
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	if _, err := l.cli.Delete(rctx, l.opts.Prefix+"page/"+browser+"/"+target); err != nil {
		return l.unavailable(ctx, "forgetting tab "+target, start, err)
	}
	return nil
}

// parseID reads an id kept at key.
func parseID(v []byte, key string) (int, error) {
	id, err := strconv.Atoi(string(v))
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("cluster: %s holds %q, not a page id; delete the key (etcdctl del %s) and restart the pagemux processes on that browser", key, v, key)
	}
	return id, nil
}

// Browser contexts. An agent's pages are in a browser context of its own
// (cookies, storage), and an agent whose requests go to several replicas
// must find the same one on each: the context's id is kept at
//
//	PREFIX/context/BROWSER/KEY = the browser context id
//
// The context is made by whichever process needs it first, and must not be
// disposed of when that process goes (Chrome's disposeOnDetach is for a
// context of one connection), so it is the process that closes its last
// page, in any process, that disposes of it and deletes the key.

// BrowserContext returns the id of the browser context that every process
// uses for key in browser: the one kept, if Chrome still has it (exists),
// else one made with create (a context that outlives the connection that
// made it), kept if no other process kept its own first; a context made
// and not kept is dropped.
func (l *Locks) BrowserContext(ctx context.Context, browser, key string,
	create func(context.Context) (string, error), exists func(context.Context, string) (bool, error), drop func(string)) (string, error) {
	start := time.Now()
	k := l.opts.Prefix + "context/" + browser + "/" + key
	for {
		rctx, cancel := l.requestContext(ctx)
		res, err := l.cli.Get(rctx, k)
		cancel()
		if err != nil {
			return "", l.unavailable(ctx, "browser context "+key, start, err)
		}
		cmp := clientv3.Compare(clientv3.Version(k), "=", 0)
		if len(res.Kvs) == 1 {
			id := string(res.Kvs[0].Value)
			ok, err := exists(ctx, id)
			if err != nil {
				return "", err
			}
			if ok {
				return id, nil
			}
			cmp = clientv3.Compare(clientv3.ModRevision(k), "=", res.Kvs[0].ModRevision) // gone: replace it
		}
		id, err := create(ctx)
		if err != nil {
			return "", err
		}
		rctx, cancel = l.requestContext(ctx)
		put, err := l.cli.Txn(rctx).If(cmp).Then(clientv3.OpPut(k, id)).Commit()
		cancel()
		if err == nil && put.Succeeded {
			return id, nil
		}
		drop(id)
		if err != nil {
			return "", l.unavailable(ctx, "browser context "+key, start, err)
		}
		// Another process kept its own first: use that one.
	}
}

// ForgetBrowserContext deletes the key of a context that was disposed of,
// unless it names another one by now.
func (l *Locks) ForgetBrowserContext(ctx context.Context, browser, key, id string) error {
	start := time.Now()
	k := l.opts.Prefix + "context/" + browser + "/" + key
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	if _, err := l.cli.Txn(rctx).If(clientv3.Compare(clientv3.Value(k), "=", id)).Then(clientv3.OpDelete(k)).Commit(); err != nil {
		return l.unavailable(ctx, "forgetting browser context "+key, start, err)
	}
	return nil
}
