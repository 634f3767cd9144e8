package browser

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
)

// cookieSet keeps the cookies given to SetCookies, so that every Chrome
// whose cookie jar starts empty gets them too: a Chrome pagemux launched
// again after its last one died (a new temporary profile; a kept one loses
// its session cookies), the context of an OwnContext attach, a Chrome of a
// pool that came up after the call. An attached Chrome's default context
// keeps its jar across a reattach, so it is given only the cookies it has
// not had: the site may have changed those since.
type cookieSet struct {
	mu  sync.Mutex
	all []*network.CookieParam
	// had are, for each attached Chrome by its address, the cookies of
	// all its default context was given.
	had map[string]map[*network.CookieParam]bool
}

// SetCookies sets cookies in Chrome's default browser context (pagemux's
// own with Config.OwnContext), as a response's Set-Cookie would: each
// scoped by its URL or Domain, as browsers scope cookies (by host, not by
// port). Every Chrome of a pool gets them, and so does each Chrome started
// later, a relaunch included. It starts Chrome if needed, and fails when
// a running Chrome refuses them; those refused by every Chrome are not
// kept.
func (b *Browser) SetCookies(ctx context.Context, cookies []*network.CookieParam) error {
	if err := b.Start(ctx); err != nil {
		return err
	}
	cookies = slices.Clone(cookies)
	var errs []error
	took := false
	given := map[*launch]bool{}
	give := func() error {
		for _, l := range b.launches() {
			if given[l] {
				continue
			}
			select {
			case <-l.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if !l.ready() || l.unresponsiveErr() != nil {
				continue // a Chrome not up gets them when it starts
			}
			given[l] = true
			if err := b.giveCookies(ctx, l, cookies); err != nil {
				errs = append(errs, err)
				continue
			}
			took = true
		}
		return nil
	}
	if err := give(); err != nil {
		return err
	}
	if took {
		b.cookies.mu.Lock()
		b.cookies.all = append(b.cookies.all, cookies...)
		b.cookies.mu.Unlock()
		// A Chrome that started meanwhile read the set before them.
		if err := give(); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// launches returns the current launch of each member that has one.
func (b *Browser) launches() []*launch {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ls []*launch
	for _, m := range b.members {
		if m.launch != nil {
			ls = append(ls, m.launch)
		}
	}
	return ls
}

// launchCookies gives a Chrome that just started the kept cookies its jar
// lacks (see cookieSet).
func (b *Browser) launchCookies(l *launch) {
	b.cookies.mu.Lock()
	lacks := b.cookies.all
	if b.keepsJar(l) {
		lacks = slices.DeleteFunc(slices.Clone(lacks), func(c *network.CookieParam) bool { return b.cookies.had[l.url][c] })
	}
	b.cookies.mu.Unlock()
	if len(lacks) == 0 {
		return
	}
	if err := b.giveCookies(l.rootCtx, l, lacks); err != nil {
		b.log.Warn("the cookies set before this Chrome started", "browser", l.url, "error", err)
	}
}

// keepsJar reports whether l's cookies outlive it: an attached Chrome's
// default context.
func (b *Browser) keepsJar(l *launch) bool {
	return b.cfg.Attaches() && l.ownContext == ""
}

// giveCookies sets cookies in l's default context (or its own).
func (b *Browser) giveCookies(ctx context.Context, l *launch, cookies []*network.CookieParam) error {
	cctx, cancel := context.WithTimeout(l.rootCtx, startTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if _, err := chromedp.CallBrowser(cctx, storage.SetCookies, storage.SetCookiesParams{Cookies: cookies, BrowserContextID: l.ownContext}); err != nil {
		err = l.explainBrowser(err)
		if len(b.members) > 1 {
			err = fmt.Errorf("%s: %w", l.url, err)
		}
		return fmt.Errorf("set cookies: %w", err)
	}
	if b.keepsJar(l) {
		b.cookies.mu.Lock()
		if b.cookies.had == nil {
			b.cookies.had = map[string]map[*network.CookieParam]bool{}
		}
		if b.cookies.had[l.url] == nil {
			b.cookies.had[l.url] = map[*network.CookieParam]bool{}
		}
		for _, c := range cookies {
			b.cookies.had[l.url][c] = true
		}
		b.cookies.mu.Unlock()
	}
	return nil
}
