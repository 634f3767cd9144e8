package browser

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/domstorage"
	"github.com/chromedp/cdproto/indexeddb"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// This file is a page's browser state: the cookies of the browser context
// it is in, the web storage (localStorage, sessionStorage) of the origins
// of its frames, and their IndexedDB databases. Cookies go by the page's
// context id (Storage.getCookies and the rest take one), so pages of one
// context see each other's cookies and never another context's; storage
// goes by the page's own session (DOMStorage, IndexedDB), keyed as Chrome
// keys the frames' storage, so sessionStorage is the tab's own. Nothing
// here runs the page's scripts: a page cannot stand in for its storage.

// Storage is a page's view of its browser context's storage: the
// context's cookies, and the web storage and IndexedDB of the origins the
// page's frames show, through the page's own DevTools sessions (no page
// script runs). Take it with Page.Storage; call it holding the page's lock.
type Storage struct{ p *Page }

// Storage returns the page's storage view.
func (p *Page) Storage() Storage { return Storage{p} }

// Cookies returns the cookies of the page's browser context, every domain
// of it. It does not filter: callers do.
func (s Storage) Cookies(ctx context.Context) ([]*network.Cookie, error) {
	var res storage.GetCookiesResult
	err := s.inContext(ctx, func(cctx context.Context, id cdp.BrowserContextID) (err error) {
		res, err = chromedp.CallBrowser(cctx, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: id})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the cookies: %w", err)
	}
	return res.Cookies, nil
}

// SetCookies sets cookies in the page's browser context, as Set-Cookie
// would: each scoped by its URL or Domain. Chrome refuses all of them if
// it refuses one.
func (s Storage) SetCookies(ctx context.Context, cookies []*network.CookieParam) error {
	err := s.inContext(ctx, func(cctx context.Context, id cdp.BrowserContextID) error {
		_, err := chromedp.CallBrowser(cctx, storage.SetCookies, storage.SetCookiesParams{Cookies: cookies, BrowserContextID: id})
		return err
	})
	if err != nil {
		return fmt.Errorf("set the cookies: %w", err)
	}
	return nil
}

// DeleteCookies deletes the cookies of the page's browser context that
// match d (a name, and a URL, domain or path if set), through the page's
// session, which acts on its context's cookies only.
func (s Storage) DeleteCookies(ctx context.Context, d network.DeleteCookiesParams) error {
	p := s.p
	if err := p.Ready(ctx); err != nil {
		return err
	}
	cctx, cancel := p.Context(ctx)
	defer cancel()
	if _, err := chromedp.Call(cctx, network.DeleteCookies, d); err != nil {
		return fmt.Errorf("delete the cookies: %w", p.explain(ctx, err))
	}
	return nil
}

// ClearCookies deletes every cookie of the page's browser context.
func (s Storage) ClearCookies(ctx context.Context) error {
	err := s.inContext(ctx, func(cctx context.Context, id cdp.BrowserContextID) error {
		_, err := chromedp.CallBrowser(cctx, storage.ClearCookies, storage.ClearCookiesParams{BrowserContextID: id})
		return err
	})
	if err != nil {
		return fmt.Errorf("clear the cookies: %w", err)
	}
	return nil
}

// inContext runs fn with a context for browser commands and the id of the
// page's browser context, which the browser's commands must be given:
// without it they act on Chrome's default context, whatever the page's.
func (s Storage) inContext(ctx context.Context, fn func(cctx context.Context, id cdp.BrowserContextID) error) error {
	p := s.p
	if err := p.Ready(ctx); err != nil {
		return err
	}
	cctx, cancel := p.Context(ctx)
	defer cancel()
	id, err := p.browserContext(cctx)
	if err != nil {
		return p.explain(ctx, err)
	}
	if id == "" {
		return fmt.Errorf("page %d is in no browser context Chrome names; open a page first (new_page)", p.ID)
	}
	return p.explain(ctx, fn(cctx, id))
}

// SameContext reports whether q is in the browser context of p: they
// share cookies and localStorage.
func (p *Page) SameContext(ctx context.Context, q *Page) (bool, error) {
	if p == q {
		return true, nil
	}
	var ids [2]cdp.BrowserContextID
	for i, pg := range []*Page{p, q} {
		err := pg.Storage().inContext(ctx, func(_ context.Context, id cdp.BrowserContextID) error {
			ids[i] = id
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	return ids[0] == ids[1], nil
}

// StorageOrigin is an origin whose storage a page holds: its top
// document's or a frame's, with the key Chrome keeps its storage by (a
// frame of another site than the top document's has storage of its own,
// apart from the same origin's at the top of a tab).
type StorageOrigin struct {
	Origin string
	Key    string
	// frame is the frame's target when it runs out of the page's process
	// (a frame of another site): its storage is reached in its session.
	frame target.ID
}

// StorageOrigins returns the origins of the page's documents, its top
// document's first: the storage the page holds. Documents with an opaque
// origin (about:blank, data:) have none. Frames of other sites, which
// Chrome runs out of the page's process, are found among the browser's
// iframe targets by their parent frame.
func (s Storage) StorageOrigins(ctx context.Context) ([]StorageOrigin, error) {
	p := s.p
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	cctx, cancel := p.Context(ctx)
	defer cancel()
	tree, err := chromedp.Call(cctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return nil, fmt.Errorf("list the frames: %w", p.explain(ctx, err))
	}
	var out []StorageOrigin
	frames := map[cdp.FrameID]bool{}
	add := func(o StorageOrigin, id cdp.FrameID) {
		frames[id] = true
		if o.Origin == "" {
			return
		}
		o.Key = o.Origin + "/"
		scctx, err := s.sessionOf(cctx, o)
		if err != nil {
			return // a frame that went away meanwhile
		}
		if res, err := chromedp.Call(scctx, storage.GetStorageKey, storage.GetStorageKeyParams{FrameID: id}); err == nil && res.StorageKey != "" {
			o.Key = string(res.StorageKey)
		}
		if !slices.ContainsFunc(out, func(s StorageOrigin) bool { return s.Key == o.Key }) {
			out = append(out, o)
		}
	}
	var walk func(t *page.FrameTree)
	walk = func(t *page.FrameTree) {
		if t == nil || t.Frame == nil {
			return
		}
		add(StorageOrigin{Origin: frameOrigin(t.Frame.SecurityOrigin)}, t.Frame.ID)
		for _, c := range t.ChildFrames {
			walk(c)
		}
	}
	walk(tree.FrameTree)
	if err := s.remoteFrames(cctx, frames, add); err != nil {
		return nil, p.explain(ctx, err)
	}
	return out, nil
}

// remoteFrames adds the frames of the page that run in processes of their
// own (iframe targets), children of frames already known, to add.
func (s Storage) remoteFrames(ctx context.Context, known map[cdp.FrameID]bool, add func(o StorageOrigin, id cdp.FrameID)) error {
	res, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return fmt.Errorf("list the frames of other sites: %w", err)
	}
	for found := true; found; {
		found = false
		for _, t := range res.TargetInfos {
			id := cdp.FrameID(t.TargetID)
			if t.Type != "iframe" || known[id] || !known[t.ParentFrameID] {
				continue
			}
			add(StorageOrigin{Origin: frameOrigin(originOf(t.URL)), frame: t.TargetID}, id)
			found = true
		}
	}
	return nil
}

// sessionOf is a context for commands on the session that holds o's
// storage: the page's (whose call context cctx is), or its frame's.
func (s Storage) sessionOf(cctx context.Context, o StorageOrigin) (context.Context, error) {
	p := s.p
	if o.frame == "" {
		return cctx, nil
	}
	t, err := p.frames.attach(cctx, p, o.frame)
	if err != nil {
		return nil, err
	}
	return sessionCall(cctx, t), nil
}

// frameOrigin is a frame's security origin, "" for an opaque one.
func frameOrigin(o string) string {
	if o == "" || o == "null" || !(strings.HasPrefix(o, "http://") || strings.HasPrefix(o, "https://")) {
		return ""
	}
	return o
}

// WebStorage is one origin's localStorage or sessionStorage in a page:
// the tab's own sessionStorage, the context's localStorage.
type WebStorage struct {
	Origin StorageOrigin
	Local  bool // localStorage; false: sessionStorage
}

// id is the storage's DOMStorage id.
func (w WebStorage) id() *domstorage.StorageID {
	return &domstorage.StorageID{StorageKey: domstorage.SerializedStorageKey(w.Origin.Key), IsLocalStorage: w.Local}
}

// StorageItems returns the items of w, as [key, value] pairs in Chrome's
// order.
func (s Storage) StorageItems(ctx context.Context, w WebStorage) ([][2]string, error) {
	var items [][2]string
	err := s.onSession(ctx, w.Origin, func(cctx context.Context) error {
		res, err := chromedp.Call(cctx, domstorage.GetDOMStorageItems, domstorage.GetDOMStorageItemsParams{StorageID: w.id()})
		if err != nil {
			return err
		}
		for _, e := range res.Entries {
			if len(e) == 2 {
				items = append(items, [2]string{e[0], e[1]})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the storage of %s: %w", w.Origin.Origin, err)
	}
	return items, nil
}

// SetStorageItem sets key to value in w; the origin's documents see it at
// once, as another tab's setItem.
func (s Storage) SetStorageItem(ctx context.Context, w WebStorage, key, value string) error {
	err := s.onSession(ctx, w.Origin, func(cctx context.Context) error {
		_, err := chromedp.Call(cctx, domstorage.SetDOMStorageItem, domstorage.SetDOMStorageItemParams{StorageID: w.id(), Key: key, Value: value})
		return err
	})
	if err != nil {
		return fmt.Errorf("set an item in the storage of %s: %w", w.Origin.Origin, err)
	}
	return nil
}

// RemoveStorageItem removes key from w; a key it lacks is no error.
func (s Storage) RemoveStorageItem(ctx context.Context, w WebStorage, key string) error {
	err := s.onSession(ctx, w.Origin, func(cctx context.Context) error {
		_, err := chromedp.Call(cctx, domstorage.RemoveDOMStorageItem, domstorage.RemoveDOMStorageItemParams{StorageID: w.id(), Key: key})
		return err
	})
	if err != nil {
		return fmt.Errorf("remove an item from the storage of %s: %w", w.Origin.Origin, err)
	}
	return nil
}

// ClearStorage removes every item of w.
func (s Storage) ClearStorage(ctx context.Context, w WebStorage) error {
	err := s.onSession(ctx, w.Origin, func(cctx context.Context) error {
		_, err := chromedp.Call(cctx, domstorage.Clear, domstorage.ClearParams{StorageID: w.id()})
		return err
	})
	if err != nil {
		return fmt.Errorf("clear the storage of %s: %w", w.Origin.Origin, err)
	}
	return nil
}

// onSession runs fn with a context for commands on the session that holds
// o's storage.
func (s Storage) onSession(ctx context.Context, o StorageOrigin, fn func(cctx context.Context) error) error {
	p := s.p
	if err := p.Ready(ctx); err != nil {
		return err
	}
	cctx, cancel := p.Context(ctx)
	defer cancel()
	scctx, err := s.sessionOf(cctx, o)
	if err != nil {
		return p.explain(ctx, err)
	}
	return p.explain(ctx, fn(scctx))
}

// IndexedDB is one IndexedDB database of an origin, as Chrome keeps it.
type IndexedDB struct {
	Name    string
	Version float64
	Stores  []ObjectStore
}

// ObjectStore is one object store of an IndexedDB database.
type ObjectStore struct {
	Name          string
	KeyPath       string // "" for out-of-line keys
	AutoIncrement bool
	Indexes       []string
	Records       float64 // how many records it holds
}

// IndexedDBs lists the IndexedDB databases of an origin of the page, with
// their object stores and how many records each holds. It reads no
// record.
func (s Storage) IndexedDBs(ctx context.Context, o StorageOrigin) ([]IndexedDB, error) {
	var dbs []IndexedDB
	err := s.onSession(ctx, o, func(cctx context.Context) error {
		names, err := chromedp.Call(cctx, indexeddb.RequestDatabaseNames, indexeddb.RequestDatabaseNamesParams{StorageKey: o.Key})
		if err != nil {
			return err
		}
		for _, name := range names.DatabaseNames {
			db, err := databaseOf(cctx, o.Key, name)
			if err != nil {
				return err
			}
			dbs = append(dbs, db)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the IndexedDB databases of %s: %w", o.Origin, err)
	}
	return dbs, nil
}

// databaseOf describes one database of a storage key.
func databaseOf(ctx context.Context, key, name string) (IndexedDB, error) {
	res, err := chromedp.Call(ctx, indexeddb.RequestDatabase, indexeddb.RequestDatabaseParams{StorageKey: key, DatabaseName: name})
	if err != nil {
		return IndexedDB{}, fmt.Errorf("database %q: %w", name, err)
	}
	db := IndexedDB{Name: name}
	if res.DatabaseWithObjectStores == nil {
		return db, nil
	}
	db.Version = res.DatabaseWithObjectStores.Version
	for _, s := range res.DatabaseWithObjectStores.ObjectStores {
		st := ObjectStore{Name: s.Name, KeyPath: keyPath(s.KeyPath), AutoIncrement: s.AutoIncrement}
		for _, ix := range s.Indexes {
			st.Indexes = append(st.Indexes, ix.Name)
		}
		meta, err := chromedp.Call(ctx, indexeddb.GetMetadata, indexeddb.GetMetadataParams{StorageKey: key, DatabaseName: name, ObjectStoreName: s.Name})
		if err != nil {
			return IndexedDB{}, fmt.Errorf("database %q, object store %q: %w", name, s.Name, err)
		}
		st.Records = meta.EntriesCount
		db.Stores = append(db.Stores, st)
	}
	return db, nil
}

// keyPath is an object store's key path as JavaScript would write it.
func keyPath(k *indexeddb.KeyPath) string {
	switch {
	case k == nil:
		return ""
	case k.Type == indexeddb.KeyPathTypeArray:
		return "[" + strings.Join(k.Array, ", ") + "]"
	}
	return k.String
}

// presetState is what PresetState gives the default context of every
// Chrome, besides its cookies (kept with SetCookies').
type presetState struct {
	mu     sync.Mutex
	script string
}

// PresetState gives the default browser context of every Chrome pagemux
// starts (a relaunch, each Chrome of a pool) cookies and an init script,
// before any page of it loads: the cookies as SetCookies keeps them for
// Chromes to come, the script (pagemux --storage-state's localStorage) in
// every page of that context as pagemux attaches to it, before the
// page's first document that pagemux loads. Call it before the first
// Start: it does not start Chrome, nor reach the pages met already or the
// contexts of isolated pages (new_page's isolatedContext, HTTP agents').
func (b *Browser) PresetState(cookies []*network.CookieParam, script string) {
	b.cookies.mu.Lock()
	b.cookies.all = append(b.cookies.all, cookies...)
	b.cookies.mu.Unlock()
	b.preset.mu.Lock()
	b.preset.script = script
	b.preset.mu.Unlock()
}

// presetScript adds PresetState's script to a page of the default context
// as pagemux attaches to it. A failure is logged: the page works without.
func (p *Page) presetScript(ctx context.Context) {
	p.b.preset.mu.Lock()
	script := p.b.preset.script
	p.b.preset.mu.Unlock()
	if script == "" || p.b.contexts.holds(p.TargetID) {
		return
	}
	cctx, cancel := p.Context(ctx)
	defer cancel()
	if _, err := chromedp.Call(cctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script}); err != nil {
		p.b.log.Warn("the storage state's localStorage script", "page", p.ID, "error", err)
	}
}

// holds reports whether a page is in one of the named contexts.
func (cs *contextSet) holds(id target.ID) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.byTarget[id] != nil
}
