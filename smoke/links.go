package smoke

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The links check (--check-links) requests every same-origin <a href> of a
// page, as the page itself would (its cookies, the --header rules), and
// fails on a link that answers 400 or more or cannot be fetched. A link is
// checked once per run, however many pages link to it; each page that
// links to a broken one says so.

const checkLinks = "links"

// maxLinks bounds the links checked of one page.
const maxLinks = 100

// signOut matches links that would log the run out: a GET of them ends the
// session --login, --cookie or --storage-state gave every page.
var signOut = regexp.MustCompile(`(?i)(log|sign)[-_]?(out|off)`)

// linksJS lists the page's same-origin links, without fragments, in page
// order and deduplicated: the first 1000, which keeps the answer under
// evaluate_script's inline limit.
const linksJS = `() => {
  const seen = new Set();
  for (const a of document.querySelectorAll("a[href]")) {
    let u;
    try { u = new URL(a.href, location.href); } catch (e) { continue; }
    if (u.origin !== location.origin || a.hasAttribute("download")) continue;
    u.hash = "";
    seen.add(u.href);
    if (seen.size >= 1000) break;
  }
  return [...seen];
}`

// fetchLinksJS requests each URL with HEAD, and with GET where HEAD fails
// or answers 400 or more (servers that do not do HEAD), a few at a time,
// and returns url: status, or url: "error text". A GET's body is not read.
const fetchLinksJS = `async (urls, ms) => {
  const out = {};
  const get = async (u, method) => {
    const r = await fetch(u, {method, credentials: "include", redirect: "follow", cache: "no-store", signal: AbortSignal.timeout(ms)});
    try { if (r.body) r.body.cancel(); } catch (e) {}
    return r.status;
  };
  const one = async u => {
    try {
      const s = await get(u, "HEAD");
      if (s < 400) return s;
    } catch (e) {}
    try { return await get(u, "GET"); } catch (e) { return String(e && e.message || e); }
  };
  const queue = [...urls];
  await Promise.all(Array.from({length: 6}, async () => {
    for (let u; (u = queue.shift()) !== undefined;) out[u] = await one(u);
  }));
  return out;
}`

// linkResults are the outcomes of the run's links, each fetched once.
type linkResults struct {
	mu sync.Mutex
	m  map[string]*linkResult
}

type linkResult struct {
	done   chan struct{}
	status int    // HTTP status, when fetched
	err    string // why it could not be fetched
}

// pageLinks reads the page's same-origin links, for --check-links and
// --crawl: those --ignore-request skips, and sign-out links when the run
// has a session, left out.
func (k *checker) pageLinks(ctx context.Context, id int) ([]string, error) {
	var urls []string
	if err := k.a.scriptValue(ctx, map[string]any{"pageId": id, "function": linksJS, "waitForStableDom": false}, &urls); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(urls, func(u string) bool {
		return (k.o.IgnoreRequest != nil && k.o.IgnoreRequest.MatchString(u)) || (k.loggedIn() && signOut.MatchString(u))
	}), nil
}

// links checks the page's links: those no other page has claimed it
// fetches from the page, then it waits for the others' outcomes.
func (k *checker) links(ctx context.Context, id int, p *Page, urls []string, err error) {
	c := p.check(checkLinks)
	start := time.Now()
	defer func() { c.Time = Millis(time.Since(start)) }()
	if err != nil {
		c.broken(err)
		return
	}
	if len(urls) > maxLinks {
		c.add(Warning, "%d more links than the %d checked of a page were not checked", len(urls)-maxLinks, maxLinks)
		urls = urls[:maxLinks]
	}
	mine, results := k.linkResults.claim(urls)
	if len(mine) > 0 {
		k.fetchLinks(ctx, id, mine)
	}
	for i, r := range results {
		select {
		case <-r.done:
		case <-ctx.Done():
			c.broken(fmt.Errorf("waiting for the links other pages check: %w", ctx.Err()))
			return
		}
		switch {
		case r.err != "":
			c.add(Error, "%s: %s", urls[i], r.err)
		case r.status >= 400:
			c.add(Error, "%s: HTTP %d %s", urls[i], r.status, http.StatusText(r.status))
		}
	}
}

// fetchLinks fetches urls from the page and settles their results, each
// one, whatever happens: other pages wait for them.
func (k *checker) fetchLinks(ctx context.Context, id int, urls []string) {
	got := map[string]json.RawMessage{}
	list, _ := json.Marshal(urls)
	fn := fmt.Sprintf("async () => (%s)(%s, %d)", fetchLinksJS, list, k.o.Timeout.Milliseconds())
	err := k.a.scriptValue(ctx, map[string]any{"pageId": id, "function": fn, "waitForStableDom": false}, &got)
	k.linkResults.mu.Lock()
	defer k.linkResults.mu.Unlock()
	for _, u := range urls {
		r := k.linkResults.m[u]
		var status int
		var why string
		switch raw, ok := got[u]; {
		case err != nil:
			r.err = "could not be checked: " + oneLine(err.Error())
		case !ok:
			r.err = "could not be checked: no answer for it"
		case json.Unmarshal(raw, &status) == nil:
			r.status = status
		case json.Unmarshal(raw, &why) == nil:
			r.err = "the request failed: " + why
		default:
			r.err = "could not be checked: " + string(raw)
		}
		close(r.done)
	}
}

// loggedIn says whether the run gave the pages a session, which a sign-out
// link would end.
func (k *checker) loggedIn() bool {
	return len(k.o.Login) > 0 || len(k.o.Cookies) > 0 || k.o.StorageState != nil
}

// claim returns the URLs of urls no page claimed before, now this one's to
// fetch, and the results of all of urls, to wait for.
func (lr *linkResults) claim(urls []string) (mine []string, all []*linkResult) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.m == nil {
		lr.m = map[string]*linkResult{}
	}
	for _, u := range urls {
		r, ok := lr.m[u]
		if !ok {
			r = &linkResult{done: make(chan struct{})}
			lr.m[u] = r
			mine = append(mine, u)
		}
		all = append(all, r)
	}
	return mine, all
}

// notPages are the extensions of links --crawl does not follow: files a
// browser downloads or shows as they are, not pages to check.
var notPages = regexp.MustCompile(`(?i)\.(pdf|zip|gz|tgz|tar|rar|7z|dmg|exe|msi|apk|png|jpe?g|gif|webp|avif|svg|ico|mp[34]|webm|mov|avi|wav|ogg|woff2?|ttf|css|js|json|xml|txt|csv|docx?|xlsx?|pptx?)$`)

// crawl adds the pages p links to that no page of the run has, up to
// --crawl of them in all, to r.Pages, in link order. Call it with r.Pages
// guarded.
func (k *checker) crawl(ctx context.Context, r *Report, p *Page) {
	if k.o.Crawl == 0 || ctx.Err() != nil || p.Status == 0 || p.Status >= 400 {
		return
	}
	if k.seen == nil {
		k.seen = map[string]bool{}
		for _, q := range r.Pages {
			k.seen[withoutFragment(q.URL)] = true
		}
	}
	for _, u := range p.links {
		if k.crawled >= k.o.Crawl {
			return
		}
		if k.seen[u] || notPages.MatchString(strings.SplitN(u, "?", 2)[0]) {
			continue
		}
		k.seen[u] = true
		k.crawled++
		np := k.newPage(u)
		np.FoundOn = p.URL
		r.Pages = append(r.Pages, np)
		k.prog.add(u)
	}
}

// withoutFragment is u without its #fragment, as links are compared.
func withoutFragment(u string) string {
	before, _, _ := strings.Cut(u, "#")
	return before
}
