package tools

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/storagestate"
)

// The browser state tools: the cookies of a page's browser context, the
// localStorage and sessionStorage of an origin of a page, its IndexedDB
// databases listed, and the context's storage state saved to a file and
// restored from one (Playwright's storageState format, the one `pagemux
// smoke --storage-state` reads). Named as Playwright MCP names them without
// its browser_ prefix. Each acts on the browser context of the page the
// call names (pageId, else the selected page) and takes that page's lock
// (pageScope): over HTTP an agent's pages are in a context of its own, so
// nothing here reads or writes another agent's cookies or storage (with
// --shared-context agents share one context, and so its cookies).

// stateTools lists the browser state tools.
func (s *Server) stateTools() []tool {
	ts := []tool{s.cookieList(), s.cookieGet(), s.cookieSet(), s.cookieDelete(), s.cookieClear()}
	for _, k := range []storageKind{localStorage, sessionStorage} {
		ts = append(ts, s.storageList(k), s.storageGet(k), s.storageSet(k), s.storageDelete(k), s.storageClear(k))
	}
	return append(ts, s.indexedDBList(), s.storageState(), s.setStorageState())
}

// cookieScope are the arguments that pick cookies by where they are sent.
type cookieScope struct {
	Domain string `json:"domain,omitempty" jsonschema:"Only cookies sent to this host: a cookie of exactly this domain, or of a parent domain that covers it (.example.com covers app.example.com)."`
	URL    string `json:"url,omitempty" jsonschema:"Only cookies a request to this URL would carry: its host, path and scheme (secure cookies go to https only)."`
}

// cookieListArgs are the arguments of cookie_list.
type cookieListArgs struct {
	pageArg
	cookieScope
	Path string `json:"path,omitempty" jsonschema:"Only cookies sent to this path: those whose path is it or a parent of it."`
	Name string `json:"name,omitempty" jsonschema:"Only cookies of this name."`
}

// cookieList is cookie_list: the context's cookies, filtered.
func (s *Server) cookieList() tool {
	return newTool("cookie_list", "Lists the cookies of the page's browser context (all sites, unless filtered by domain, path, url or name), with their attributes. Over HTTP an agent's pages are in a context of its own (unless pagemux runs with --shared-context): these are its cookies alone.", pageScope,
		func(ctx context.Context, c *call, a *cookieListArgs) error {
			f, err := newCookieFilter(a.cookieScope, a.Path, a.Name)
			if err != nil {
				return err
			}
			all, err := c.page.Storage().Cookies(ctx)
			if err != nil {
				return err
			}
			shown := slices.DeleteFunc(all, func(ck *network.Cookie) bool { return !f.match(ck) })
			c.resp.say("## Cookies of page %d's browser context", c.page.ID)
			if len(shown) == 0 {
				c.resp.say("No cookies%s.", f.describe())
				return nil
			}
			for _, ck := range shown {
				c.resp.say("%s", cookieLine(ck))
			}
			return nil
		})
}

// cookieGetArgs are the arguments of cookie_get.
type cookieGetArgs struct {
	pageArg
	cookieScope
	Name string `json:"name" jsonschema:"The cookie's name."`
}

// cookieGet is cookie_get: the cookies of a name.
func (s *Server) cookieGet() tool {
	t := newTool("cookie_get", "Gets a cookie of the page's browser context by name (each of that name, one per domain and path; domain or url narrow it down).", pageScope,
		func(ctx context.Context, c *call, a *cookieGetArgs) error {
			f, err := newCookieFilter(a.cookieScope, "", a.Name)
			if err != nil {
				return err
			}
			all, err := c.page.Storage().Cookies(ctx)
			if err != nil {
				return err
			}
			found := slices.DeleteFunc(all, func(ck *network.Cookie) bool { return !f.match(ck) })
			if len(found) == 0 {
				return &argError{fmt.Sprintf("no cookie%s in page %d's browser context; cookie_list lists its cookies", f.describe(), c.page.ID)}
			}
			for _, ck := range found {
				c.resp.say("%s", cookieLine(ck))
			}
			return nil
		})
	patchSchema(&t, map[string]map[string]any{"name": {"minLength": 1}})
	return t
}

// cookieSetArgs are the arguments of cookie_set.
type cookieSetArgs struct {
	pageArg
	Name     string   `json:"name" jsonschema:"The cookie's name."`
	Value    string   `json:"value" jsonschema:"The cookie's value."`
	Domain   string   `json:"domain,omitempty" jsonschema:"The cookie's domain: example.com for that host alone, .example.com for its subdomains too. Give domain or url; neither: the page's URL."`
	URL      string   `json:"url,omitempty" jsonschema:"A URL the cookie is for, as if it had answered with Set-Cookie: it gives the host (and path and secure, unless given). Give domain or url; neither: the page's URL."`
	Path     string   `json:"path,omitempty" jsonschema:"The cookie's path, from /. Default: /."`
	Expires  *float64 `json:"expires,omitempty" jsonschema:"When the cookie expires, in seconds since 1970 (Unix time). Omitted or -1: a session cookie."`
	HTTPOnly bool     `json:"httpOnly,omitempty" jsonschema:"Whether the page's scripts cannot read it (document.cookie)."`
	Secure   bool     `json:"secure,omitempty" jsonschema:"Whether it goes to https only. sameSite None needs it."`
	SameSite string   `json:"sameSite,omitempty" jsonschema:"Strict, Lax or None. Omitted: Chrome's default (Lax)."`
	// PartitionKey is pagemux's own: CHIPS, cheap with Chrome's cookies.
	PartitionKey string `json:"partitionKey,omitempty" jsonschema:"Sets a partitioned cookie (CHIPS) for this top-level site, such as https://example.com: sent only in frames under that site. Needs secure."`
}

// cookieSet is cookie_set: one cookie, with every attribute.
func (s *Server) cookieSet() tool {
	t := newTool("cookie_set", "Sets a cookie in the page's browser context, with its attributes, as a response's Set-Cookie would: pages of the context send it from their next request on.", pageScope,
		func(ctx context.Context, c *call, a *cookieSetArgs) error {
			p, err := cookieParam(a, c.page.URL())
			if err != nil {
				return err
			}
			if err := c.page.Storage().SetCookies(ctx, []*network.CookieParam{p}); err != nil {
				return &argError{fmt.Sprintf("Chrome refused cookie %q (%v); check its domain or url, path, sameSite and secure", a.Name, err)}
			}
			c.resp.say("Set cookie %s for %s in page %d's browser context.", a.Name, cmp.Or(p.Domain, p.URL), c.page.ID)
			return nil
		})
	patchSchema(&t, map[string]map[string]any{"name": {"minLength": 1}, "sameSite": {"enum": storagestate.SameSites}})
	return t
}

// cookieParam checks cookie_set's arguments and makes them Chrome's. A
// cookie with neither domain nor url is the page's URL's.
func cookieParam(a *cookieSetArgs, pageURL string) (*network.CookieParam, error) {
	if a.Domain != "" && a.URL != "" {
		return nil, &argError{"give domain or url, not both: url sets the domain itself"}
	}
	p := &network.CookieParam{Name: a.Name, Value: a.Value, Domain: a.Domain, Path: a.Path, HTTPOnly: a.HTTPOnly, Secure: a.Secure}
	host := a.Domain
	if a.Domain == "" {
		raw := a.URL
		if raw == "" {
			raw = pageURL
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			if a.URL == "" {
				return nil, &argError{fmt.Sprintf("the page shows %s, which is no site to set a cookie for: give domain or url", raw)}
			}
			return nil, &argError{fmt.Sprintf("url %q: want an http or https URL, such as https://app.example.com/", a.URL)}
		}
		p.URL, host = u.Scheme+"://"+u.Host+u.Path, u.Hostname()
	}
	ck := storagestate.Cookie{Name: a.Name, Domain: host, Path: a.Path, HTTPOnly: a.HTTPOnly, Secure: a.Secure, SameSite: a.SameSite, Expires: -1}
	if a.Expires != nil {
		ck.Expires = *a.Expires
	}
	if err := ck.Check(); err != nil {
		return nil, &argError{fmt.Sprintf("cookie %q %v", a.Name, err)}
	}
	if e := ck.Expires; e > 0 {
		if e > 1e11 {
			return nil, &argError{fmt.Sprintf("expires %v is in milliseconds or past year 5000: give seconds since 1970, such as %d", e, time.Now().Add(24*time.Hour).Unix())}
		}
		p.Expires = ck.Param().Expires
	}
	p.SameSite = ck.Param().SameSite
	if a.PartitionKey != "" {
		site, ok := storagestate.CanonicalOrigin(a.PartitionKey)
		if !ok {
			return nil, &argError{fmt.Sprintf("partitionKey %q: want a top-level site, such as https://example.com", a.PartitionKey)}
		}
		if !a.Secure {
			return nil, &argError{"a partitioned cookie (partitionKey) needs secure: true"}
		}
		p.PartitionKey = &network.CookiePartitionKey{TopLevelSite: site}
	}
	return p, nil
}

// cookieDeleteArgs are the arguments of cookie_delete.
type cookieDeleteArgs struct {
	pageArg
	Name   string `json:"name" jsonschema:"The name of the cookies to delete."`
	Domain string `json:"domain,omitempty" jsonschema:"Only the cookies of exactly this domain (.example.com and example.com are two)."`
	URL    string `json:"url,omitempty" jsonschema:"Only the cookies a request to this URL would carry. Neither domain nor url: the page's URL."`
	Path   string `json:"path,omitempty" jsonschema:"Only the cookies of exactly this path."`
}

// cookieDelete is cookie_delete: the cookies of a name, where they are sent.
func (s *Server) cookieDelete() tool {
	t := newTool("cookie_delete", "Deletes the cookies of a name from the page's browser context: those sent to the page's URL, or to url, or of exactly domain (and path, if given).", pageScope,
		func(ctx context.Context, c *call, a *cookieDeleteArgs) error {
			if a.Domain != "" && a.URL != "" {
				return &argError{"give domain or url, not both"}
			}
			d := network.DeleteCookiesParams{Name: a.Name, Domain: a.Domain, URL: a.URL, Path: a.Path}
			if a.URL != "" {
				if _, err := newCookieFilter(cookieScope{URL: a.URL}, "", ""); err != nil {
					return err
				}
			}
			if d.Domain == "" && d.URL == "" {
				if _, err := newCookieFilter(cookieScope{URL: c.page.URL()}, "", ""); err != nil {
					return &argError{fmt.Sprintf("the page shows %s, which has no cookies of its own: give domain or url", c.page.URL())}
				}
				d.URL = c.page.URL()
			}
			n, err := countDeleted(ctx, c.page, func() error { return c.page.Storage().DeleteCookies(ctx, d) })
			if err != nil {
				return err
			}
			c.resp.say("Deleted %s named %s from page %d's browser context.", plural(n, "cookie"), a.Name, c.page.ID)
			return nil
		})
	patchSchema(&t, map[string]map[string]any{"name": {"minLength": 1}})
	return t
}

// cookieClear is cookie_clear: every cookie of the context.
func (s *Server) cookieClear() tool {
	return newTool("cookie_clear", "Deletes every cookie of the page's browser context (every site's). Over HTTP, the calling agent's context alone.", pageScope,
		func(ctx context.Context, c *call, a *pageArg) error {
			n, err := countDeleted(ctx, c.page, func() error { return c.page.Storage().ClearCookies(ctx) })
			if err != nil {
				return err
			}
			c.resp.say("Deleted %s: page %d's browser context has none now.", plural(n, "cookie"), c.page.ID)
			return nil
		})
}

// countDeleted runs del and returns how many cookies of p's context it
// took away.
func countDeleted(ctx context.Context, p *browser.Page, del func() error) (int, error) {
	before, err := p.Storage().Cookies(ctx)
	if err != nil {
		return 0, err
	}
	if err := del(); err != nil {
		return 0, err
	}
	after, err := p.Storage().Cookies(ctx)
	if err != nil {
		return 0, err
	}
	return max(len(before)-len(after), 0), nil
}

// plural is n things, in words.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// cookieFilter picks cookies by where they are sent, and by name.
type cookieFilter struct {
	host, path, name string
	secureOnly       bool // the URL is https: secure cookies go too
	byURL            bool
}

// newCookieFilter checks the filter arguments.
func newCookieFilter(sc cookieScope, path, name string) (cookieFilter, error) {
	f := cookieFilter{host: strings.ToLower(strings.TrimPrefix(sc.Domain, ".")), path: path, name: name}
	if sc.Domain != "" && sc.URL != "" {
		return f, &argError{"give domain or url, not both: url has the host"}
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		return f, &argError{fmt.Sprintf("path %q: want a path from /, such as /app", path)}
	}
	if sc.URL != "" {
		u, err := url.Parse(sc.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return f, &argError{fmt.Sprintf("url %q: want an http or https URL, such as https://app.example.com/", sc.URL)}
		}
		f.host, f.byURL, f.secureOnly = strings.ToLower(u.Hostname()), true, u.Scheme == "https"
		if f.path == "" {
			f.path = cmp.Or(u.Path, "/")
		}
	}
	return f, nil
}

// match reports whether a request the filter describes carries ck.
func (f cookieFilter) match(ck *network.Cookie) bool {
	if f.name != "" && ck.Name != f.name {
		return false
	}
	if f.host != "" && !domainMatch(f.host, ck.Domain) {
		return false
	}
	if f.path != "" && !pathMatch(f.path, ck.Path) {
		return false
	}
	return !f.byURL || f.secureOnly || !ck.Secure
}

// domainMatch reports whether a cookie of domain goes to host (RFC 6265
// 5.1.3): a host-only cookie to its host, a .domain one to the subdomains.
func domainMatch(host, domain string) bool {
	d := strings.ToLower(domain)
	if !strings.HasPrefix(d, ".") {
		return host == d
	}
	return host == d[1:] || strings.HasSuffix(host, d)
}

// pathMatch reports whether a cookie of cookiePath goes to reqPath (RFC
// 6265 5.1.4).
func pathMatch(reqPath, cookiePath string) bool {
	switch {
	case reqPath == cookiePath:
		return true
	case !strings.HasPrefix(reqPath, cookiePath):
		return false
	}
	return strings.HasSuffix(cookiePath, "/") || reqPath[len(cookiePath)] == '/'
}

// describe is the filter in words, for "No cookies%s".
func (f cookieFilter) describe() string {
	var parts []string
	if f.name != "" {
		parts = append(parts, fmt.Sprintf(" named %q", f.name))
	}
	if f.host != "" {
		parts = append(parts, " sent to "+f.host+f.path)
	} else if f.path != "" {
		parts = append(parts, " sent to path "+f.path)
	}
	return strings.Join(parts, "")
}

// cookieLine is one cookie as the cookie tools show it, in Set-Cookie's
// words.
func cookieLine(ck *network.Cookie) string {
	parts := []string{fmt.Sprintf("%s=%s", ck.Name, ck.Value), "Domain=" + ck.Domain, "Path=" + ck.Path}
	switch {
	case ck.Session || ck.Expires <= 0 || math.IsInf(ck.Expires, 0):
		parts = append(parts, "Session")
	default:
		parts = append(parts, "Expires="+time.Unix(int64(ck.Expires), 0).UTC().Format(time.RFC3339))
	}
	if ck.HTTPOnly {
		parts = append(parts, "HttpOnly")
	}
	if ck.Secure {
		parts = append(parts, "Secure")
	}
	if ck.SameSite != "" {
		parts = append(parts, "SameSite="+string(ck.SameSite))
	}
	if ck.PartitionKey != nil {
		parts = append(parts, "Partitioned="+ck.PartitionKey.TopLevelSite)
	}
	return strings.Join(parts, "; ")
}

// storageKind is localStorage or sessionStorage, as the tools name them.
type storageKind struct {
	tool  string // the tools' prefix: localstorage
	name  string // as scripts name it: localStorage
	local bool
	scope string // what the storage is shared by, for the descriptions
}

var (
	localStorage   = storageKind{"localstorage", "localStorage", true, "the origin's pages of the browser context"}
	sessionStorage = storageKind{"sessionstorage", "sessionStorage", false, "this page (tab) alone"}
)

// originArg picks the origin of a page whose storage a call acts on.
type originArg struct {
	Origin string `json:"origin,omitempty" jsonschema:"The origin whose storage to use, such as https://app.example.com: the page's top document's (the default) or one of its frames'. Others are refused: open a page of that origin first."`
}

// storageListArgs are the arguments of the storage list and clear tools.
type storageListArgs struct {
	pageArg
	originArg
}

// storageList is localstorage_list or sessionstorage_list.
func (s *Server) storageList(k storageKind) tool {
	return newTool(k.tool+"_list", fmt.Sprintf("Lists the %s items (key and value) of an origin of the page: its top document's unless origin names one of its frames'. %s is shared by %s.", k.name, k.name, k.scope), pageScope,
		func(ctx context.Context, c *call, a *storageListArgs) error {
			w, err := webStorage(ctx, c.page, a.Origin, k)
			if err != nil {
				return err
			}
			items, err := c.page.Storage().StorageItems(ctx, w)
			if err != nil {
				return err
			}
			c.resp.say("## %s of %s (page %d)", k.name, w.Origin.Origin, c.page.ID)
			if len(items) == 0 {
				c.resp.say("No items.")
			}
			for _, it := range items {
				c.resp.say("%q: %q", it[0], it[1])
			}
			return nil
		})
}

// storageKeyArgs are the arguments of the storage get and delete tools.
type storageKeyArgs struct {
	pageArg
	originArg
	Key string `json:"key" jsonschema:"The item's key."`
}

// storageGet is localstorage_get or sessionstorage_get.
func (s *Server) storageGet(k storageKind) tool {
	return newTool(k.tool+"_get", fmt.Sprintf("Gets a %s item by key, of an origin of the page (its top document's unless origin says).", k.name), pageScope,
		func(ctx context.Context, c *call, a *storageKeyArgs) error {
			w, err := webStorage(ctx, c.page, a.Origin, k)
			if err != nil {
				return err
			}
			items, err := c.page.Storage().StorageItems(ctx, w)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(items, func(it [2]string) bool { return it[0] == a.Key })
			if i < 0 {
				return &argError{fmt.Sprintf("%s of %s has no item %q; %s_list lists its items", k.name, w.Origin.Origin, a.Key, k.tool)}
			}
			c.resp.say("%q: %q", items[i][0], items[i][1])
			return nil
		})
}

// storageSetArgs are the arguments of the storage set tools.
type storageSetArgs struct {
	pageArg
	originArg
	Key   string `json:"key" jsonschema:"The item's key."`
	Value string `json:"value" jsonschema:"The item's value."`
}

// storageSet is localstorage_set or sessionstorage_set.
func (s *Server) storageSet(k storageKind) tool {
	return newTool(k.tool+"_set", fmt.Sprintf("Sets a %s item of an origin of the page (its top document's unless origin says); the origin's documents see it at once, as if another tab had set it. %s is shared by %s.", k.name, k.name, k.scope), pageScope,
		func(ctx context.Context, c *call, a *storageSetArgs) error {
			w, err := webStorage(ctx, c.page, a.Origin, k)
			if err != nil {
				return err
			}
			if err := c.page.Storage().SetStorageItem(ctx, w, a.Key, a.Value); err != nil {
				return err
			}
			c.resp.say("Set %s item %q of %s.", k.name, a.Key, w.Origin.Origin)
			return nil
		})
}

// storageDelete is localstorage_delete or sessionstorage_delete.
func (s *Server) storageDelete(k storageKind) tool {
	return newTool(k.tool+"_delete", fmt.Sprintf("Deletes a %s item by key, of an origin of the page (its top document's unless origin says).", k.name), pageScope,
		func(ctx context.Context, c *call, a *storageKeyArgs) error {
			w, err := webStorage(ctx, c.page, a.Origin, k)
			if err != nil {
				return err
			}
			items, err := c.page.Storage().StorageItems(ctx, w)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(items, func(it [2]string) bool { return it[0] == a.Key }) {
				c.resp.say("%s of %s has no item %q: nothing to delete.", k.name, w.Origin.Origin, a.Key)
				return nil
			}
			if err := c.page.Storage().RemoveStorageItem(ctx, w, a.Key); err != nil {
				return err
			}
			c.resp.say("Deleted %s item %q of %s.", k.name, a.Key, w.Origin.Origin)
			return nil
		})
}

// storageClear is localstorage_clear or sessionstorage_clear.
func (s *Server) storageClear(k storageKind) tool {
	return newTool(k.tool+"_clear", fmt.Sprintf("Deletes every %s item of an origin of the page (its top document's unless origin says).", k.name), pageScope,
		func(ctx context.Context, c *call, a *storageListArgs) error {
			w, err := webStorage(ctx, c.page, a.Origin, k)
			if err != nil {
				return err
			}
			items, err := c.page.Storage().StorageItems(ctx, w)
			if err != nil {
				return err
			}
			if err := c.page.Storage().ClearStorage(ctx, w); err != nil {
				return err
			}
			c.resp.say("Deleted %s of %s of %s.", plural(len(items), "item"), k.name, w.Origin.Origin)
			return nil
		})
}

// webStorage is the storage of kind k of the origin a call names on page
// p: its top document's if origin is "", else one of its documents'.
func webStorage(ctx context.Context, p *browser.Page, origin string, k storageKind) (browser.WebStorage, error) {
	o, err := pageOrigin(ctx, p, origin)
	return browser.WebStorage{Origin: o, Local: k.local}, err
}

// pageOrigin finds the origin a call names among those of page p's
// documents; "" is its top document's. An origin no document of the page
// has is refused: a page holds the storage of its own documents only.
func pageOrigin(ctx context.Context, p *browser.Page, origin string) (browser.StorageOrigin, error) {
	origins, err := p.Storage().StorageOrigins(ctx)
	if err != nil {
		return browser.StorageOrigin{}, err
	}
	if origin == "" {
		if len(origins) == 0 || !strings.HasPrefix(p.URL(), origins[0].Origin) {
			return browser.StorageOrigin{}, &argError{fmt.Sprintf("page %d shows %s, which has no origin to keep storage for: open a page of the site first (navigate_page or new_page)", p.ID, p.URL())}
		}
		return origins[0], nil
	}
	want, ok := storagestate.CanonicalOrigin(origin)
	if !ok {
		return browser.StorageOrigin{}, &argError{fmt.Sprintf("origin %q: want scheme://host[:port], such as https://app.example.com", origin)}
	}
	if i := slices.IndexFunc(origins, func(o browser.StorageOrigin) bool { return o.Origin == want }); i >= 0 {
		return origins[i], nil
	}
	var have []string
	for _, o := range origins {
		have = append(have, o.Origin)
	}
	return browser.StorageOrigin{}, &argError{fmt.Sprintf("origin %s is not one of page %d's documents (they are of %s); open a page of that origin (new_page) and name that page", want, p.ID, cmp.Or(strings.Join(have, ", "), "no origin"))}
}

// indexedDBArgs are the arguments of indexeddb_list.
type indexedDBArgs struct {
	pageArg
	originArg
}

// indexedDBList is indexeddb_list: an origin's databases, described.
func (s *Server) indexedDBList() tool {
	return newTool("indexeddb_list", "Lists the IndexedDB databases of an origin of the page (its top document's unless origin says): each database's version and object stores, with their key path, indexes and how many records each holds. Reads no record.", pageScope,
		func(ctx context.Context, c *call, a *indexedDBArgs) error {
			o, err := pageOrigin(ctx, c.page, a.Origin)
			if err != nil {
				return err
			}
			dbs, err := c.page.Storage().IndexedDBs(ctx, o)
			if err != nil {
				return err
			}
			c.resp.say("## IndexedDB of %s (page %d)", o.Origin, c.page.ID)
			if len(dbs) == 0 {
				c.resp.say("No databases.")
			}
			for _, db := range dbs {
				c.resp.say("- %s (version %v): %s", db.Name, db.Version, plural(len(db.Stores), "object store"))
				for _, st := range db.Stores {
					c.resp.say("  - %s: %s%s", st.Name, plural(int(st.Records), "record"), storeDetails(st))
				}
			}
			return nil
		})
}

// storeDetails are an object store's key path and indexes, for its line.
func storeDetails(st browser.ObjectStore) string {
	var parts []string
	if st.KeyPath != "" {
		parts = append(parts, "keyPath "+st.KeyPath)
	}
	if st.AutoIncrement {
		parts = append(parts, "autoIncrement")
	}
	if len(st.Indexes) > 0 {
		parts = append(parts, "indexes "+strings.Join(st.Indexes, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// storageStateArgs are the arguments of storage_state.
type storageStateArgs struct {
	pageArg
	Filename string `json:"filename,omitempty" jsonschema:"File name to save the storage state to: a path in your workspace. Defaults to storage-state-{timestamp}.json."`
}

// storageState is storage_state: the context's state saved to a file.
func (s *Server) storageState() tool {
	return newTool("storage_state", "Saves the storage state of the page's browser context to a file in your workspace, as Playwright's storageState() writes it: the context's cookies and the localStorage of the origins its pages show. set_storage_state (or pagemux smoke --storage-state) restores it: log in once, reuse the session. The file holds secrets: hand it only to whom may have them.", pageScope,
		func(ctx context.Context, c *call, a *storageStateArgs) error {
			name := cmp.Or(a.Filename, fmt.Sprintf("storage-state-%d.json", time.Now().UnixMilli()))
			if _, err := s.files.output(ctx, name); err != nil {
				return err
			}
			st, err := s.stateOf(ctx, c.page)
			if err != nil {
				return err
			}
			full, err := s.files.write(ctx, name, st.Marshal())
			if err != nil {
				return err
			}
			items := 0
			for _, o := range st.Origins {
				items += len(o.LocalStorage)
			}
			c.resp.say("Saved the storage state of page %d's browser context to %s: %s and %s of %s.", c.page.ID, full,
				plural(len(st.Cookies), "cookie"), plural(items, "localStorage item"), plural(len(st.Origins), "origin"))
			return nil
		})
}

// stateOf is the storage state of p's browser context: its cookies, and
// the localStorage of the origins that the call's pages in that context
// show (their documents', frames' too). Pages in the context that the
// call's agent may not use are left out, as are those of another context;
// the other pages are read without their locks, in the browser: their
// storage, not their documents.
func (s *Server) stateOf(ctx context.Context, p *browser.Page) (*storagestate.State, error) {
	cookies, err := p.Storage().Cookies(ctx)
	if err != nil {
		return nil, err
	}
	st := &storagestate.State{}
	for _, ck := range cookies {
		st.Cookies = append(st.Cookies, storagestate.FromChrome(ck))
	}
	err = s.eachOrigin(ctx, p, func(q *browser.Page, o browser.StorageOrigin) error {
		items, err := q.Storage().StorageItems(ctx, browser.WebStorage{Origin: o, Local: true})
		if err != nil {
			return err
		}
		so := storagestate.Origin{Origin: o.Origin, LocalStorage: []storagestate.Item{}}
		for _, it := range items {
			so.LocalStorage = append(so.LocalStorage, storagestate.Item{Name: it[0], Value: it[1]})
		}
		st.Origins = append(st.Origins, so)
		return nil
	})
	return st, err
}

// eachOrigin calls fn once for each first-party origin that a page of
// the call's in p's browser context shows (p's first), with a page that
// holds its storage. A frame's storage of its own (partitioned under
// another site) is not among them: the file format has no place for it.
// Pages that close meanwhile are skipped.
func (s *Server) eachOrigin(ctx context.Context, p *browser.Page, fn func(q *browser.Page, o browser.StorageOrigin) error) error {
	seen := map[string]bool{}
	for _, q := range s.contextPages(ctx, p) {
		origins, err := q.Storage().StorageOrigins(ctx)
		if err != nil {
			if q == p {
				return err
			}
			continue
		}
		for _, o := range origins {
			if o.Key != o.Origin+"/" || seen[o.Origin] {
				continue
			}
			seen[o.Origin] = true
			if err := fn(q, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// contextPages are p and the other pages of the call's agent (all pages
// for stdio) in p's browser context.
func (s *Server) contextPages(ctx context.Context, p *browser.Page) []*browser.Page {
	out := []*browser.Page{p}
	pages, _ := s.pageList(ctx)
	for _, q := range pages {
		if q == p || q.Closed() {
			continue
		}
		if same, err := p.SameContext(ctx, q); err == nil && same {
			out = append(out, q)
		}
	}
	return out
}

// restoreScripts are the init scripts set_storage_state left on pages, by
// page id: a restore replaces the page's last one (else each call would
// stack one more, each putting its file's items back in every document),
// and a closed page's goes with it (forget).
type restoreScripts struct {
	mu     sync.Mutex
	byPage map[int]func()
}

// replace makes remove the page's script, removing the one before it.
func (r *restoreScripts) replace(page int, remove func()) {
	r.mu.Lock()
	old := r.byPage[page]
	if r.byPage == nil {
		r.byPage = map[int]func(){}
	}
	r.byPage[page] = remove
	r.mu.Unlock()
	if old != nil {
		old()
	}
}

// forget drops a closed page's entry.
func (r *restoreScripts) forget(page int) {
	r.mu.Lock()
	delete(r.byPage, page)
	r.mu.Unlock()
}

// setStorageStateArgs are the arguments of set_storage_state.
type setStorageStateArgs struct {
	pageArg
	Filename string `json:"filename" jsonschema:"The storage state file to restore, in your workspace: one storage_state saved, or Playwright's storageState() wrote."`
}

// maxStateFile bounds a storage state file set_storage_state reads: a
// browser's localStorage is at most 10 MiB an origin, and a file is a few
// origins'.
const maxStateFile = 64 << 20

// setStorageState is set_storage_state: a state file restored into the
// context.
func (s *Server) setStorageState() tool {
	t := newTool("set_storage_state", "Restores a storage state file (storage_state's, or Playwright's storageState) into the page's browser context: its cookies are set, and each origin's localStorage items, which the context's pages of that origin see at once and pages loaded later find before their scripts run. It adds to what the context has (cookie_clear first for a clean slate). Reload a page to send the cookies.", pageScope,
		func(ctx context.Context, c *call, a *setStorageStateArgs) error {
			b, err := s.files.read(ctx, "filename", a.Filename, maxStateFile)
			if err != nil {
				return err
			}
			st, err := storagestate.Parse(b)
			if err != nil {
				return &argError{fmt.Sprintf("%s: %v", a.Filename, err)}
			}
			if err := s.expandState(ctx, st); err != nil { // secrets.go
				return fmt.Errorf("%s: %w", a.Filename, err)
			}
			return s.restoreState(ctx, c, st)
		})
	patchSchema(&t, map[string]map[string]any{"filename": {"minLength": 1}})
	return t
}

// restoreState sets st's cookies and localStorage in the call's page's
// browser context. An origin that a page of the call's in the context
// shows gets its items at once; the others get them from an init script
// of each of those pages, in every document of that origin they load
// later, before its scripts run (as pagemux smoke does): pages opened
// later in the context do not.
func (s *Server) restoreState(ctx context.Context, c *call, st *storagestate.State) error {
	if len(st.Cookies) > 0 {
		if err := c.page.Storage().SetCookies(ctx, st.CookieParams()); err != nil {
			return &argError{fmt.Sprintf("Chrome refused the file's cookies (%v); check their domain, path and sameSite", err)}
		}
	}
	items := map[string][]storagestate.Item{}
	for _, o := range st.Origins {
		items[o.Origin] = append(items[o.Origin], o.LocalStorage...)
	}
	n, open := 0, map[string]bool{}
	err := s.eachOrigin(ctx, c.page, func(q *browser.Page, o browser.StorageOrigin) error {
		open[o.Origin] = true
		for _, it := range items[o.Origin] {
			if err := q.Storage().SetStorageItem(ctx, browser.WebStorage{Origin: o, Local: true}, it.Name, it.Value); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return err
	}
	later := &storagestate.State{}
	for _, o := range st.Origins {
		if !open[o.Origin] && len(o.LocalStorage) > 0 {
			later.Origins = append(later.Origins, o)
			n += len(o.LocalStorage)
		}
	}
	c.resp.say("Restored %s and %s of %s into page %d's browser context; reload pages (navigate_page type reload) so that their server sees the cookies.",
		plural(len(st.Cookies), "cookie"), plural(n, "localStorage item"), plural(len(st.Origins), "origin"), c.page.ID)
	if len(later.Origins) == 0 {
		return nil
	}
	pages := s.contextPages(ctx, c.page)
	script := later.LocalStorageScript()
	for _, q := range pages {
		remove, err := q.AddInitScript(ctx, script)
		if err != nil {
			if q == c.page {
				return err
			}
			continue
		}
		s.restored.replace(q.ID, remove)
	}
	var names []string
	for _, o := range later.Origins {
		names = append(names, o.Origin)
	}
	c.resp.say("No page shows %s yet: %s of the context get their items in each document of them they load, before its scripts run (pages opened later do not: call set_storage_state in them).",
		strings.Join(names, ", "), plural(len(pages), "page"))
	return nil
}
