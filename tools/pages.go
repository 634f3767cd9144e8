package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
)

type noArgs struct{}

func (s *Server) pageTools() []tool {
	return []tool{
		s.listPages(),
		s.newPage(),
		s.selectPage(),
		s.closePage(),
		s.navigatePage(),
	}
}

func (s *Server) listPages() tool {
	return newTool("list_pages", "Get a list of pages open in the browser.", browserScope,
		func(ctx context.Context, c *call, _ *noArgs) error {
			c.resp.includePages()
			return nil
		})
}

type newPageArgs struct {
	URL        string `json:"url" jsonschema:"URL to load in a new page."`
	Background bool   `json:"background,omitempty" jsonschema:"Whether to open the page in the background without bringing it to the front. Default is false (foreground)."`
	// IsolatedContext names a browser context; Browser.NewPage makes it on
	// first use and disposes of it when its last page closes.
	IsolatedContext string `json:"isolatedContext,omitempty" jsonschema:"If specified, the page is created in an isolated browser context with the given name. Pages in the same browser context share cookies and storage. Pages in different browser contexts are fully isolated (useful for clean-slate testing of cookies and authentication)."`
	Timeout         int    `json:"timeout,omitempty" jsonschema:"Maximum wait time in milliseconds. If set to 0, the default timeout will be used."`
}

func (s *Server) newPage() tool {
	t := newTool("new_page", "Creates a new page", browserScope,
		func(ctx context.Context, c *call, a *newPageArgs) error {
			if err := s.browser.CheckURL(a.URL); err != nil {
				return err // before a tab opens
			}
			if err := checkContextName(a.IsolatedContext); err != nil {
				return err
			}
			done, err := s.reservePage(ctx) // --max-pages-per-agent
			if err != nil {
				return err
			}
			defer done()
			p, err := s.browser.NewPage(ctx, a.Background, s.contextFor(ctx, a.IsolatedContext)...)
			if err != nil {
				return err
			}
			if err := s.own(ctx, p); err != nil {
				return err
			}
			done()
			// Others can see the page from now on: hold its lock while it loads.
			release, err := s.lockPage(ctx, "new_page", p)
			if err != nil {
				return err
			}
			defer release()
			progressFrom(ctx).phase("waiting for the page to load")
			if err := s.loadNew(ctx, p, a); err != nil && !isDialog(err) {
				c.resp.failed(p, a.URL, err)
				return fmt.Errorf("opened page %d, but %w", p.ID, err)
			}
			c.page = p
			c.resp.includePages()
			return nil
		})
	t.selects = true
	return t
}

// blankURL is the URL a new tab opens on.
const blankURL = "about:blank"

// loadNew loads a's URL in p, a page just opened. A new tab shows
// about:blank already, so new_page of about:blank (smoke's way to a tab)
// loads nothing: a second about:blank would wait for a load and a quiet
// DOM, 0.1 to 0.3 s, for the same empty page.
func (s *Server) loadNew(ctx context.Context, p *browser.Page, a *newPageArgs) error {
	if a.URL == blankURL {
		return nil
	}
	return p.Navigate(ctx, a.URL, ms(a.Timeout, browser.DefaultNavigationTimeout))
}

// lockPage takes the lock of a page that a browser-scope tool works on. In
// global mode the call holds the one lock already.
func (s *Server) lockPage(ctx context.Context, owner string, p *browser.Page) (func(), error) {
	if s.locks.Mode() == pagelock.Global {
		return func() {}, nil
	}
	g, err := s.locks.Acquire(ctx, pagelock.Request{Keys: []pagelock.Key{pagelock.PageKey(p.ID)}, Owner: owner, Agent: lockAgent(ctx)})
	if err != nil {
		return nil, err
	}
	return g.Release, nil
}

type selectPageArgs struct {
	PageID       int  `json:"pageId" jsonschema:"The ID of the page to select. Call list_pages to get available pages."`
	BringToFront bool `json:"bringToFront,omitempty" jsonschema:"Whether to focus the page and bring it to the top."`
}

func (s *Server) selectPage() tool {
	t := newTool("select_page", "Select a page as a context for future tool calls.", browserScope,
		func(ctx context.Context, c *call, a *selectPageArgs) error {
			p, err := s.selectFor(ctx, a.PageID)
			if err != nil {
				return err
			}
			if a.BringToFront {
				if err := p.BringToFront(ctx); err != nil {
					return err
				}
			}
			c.resp.includePages()
			return nil
		})
	t.selects = true
	return t
}

type closePageArgs struct {
	PageID int `json:"pageId" jsonschema:"The ID of the page to close. Call list_pages to list pages."`
}

func (s *Server) closePage() tool {
	t := newTool("close_page", "Closes the page by its index. The last open page cannot be closed.", pageScope,
		func(ctx context.Context, c *call, a *closePageArgs) error {
			err := s.browser.ClosePage(ctx, c.page)
			if errors.Is(err, browser.ErrLastPage) {
				c.resp.say("The last open page cannot be closed. It is fine to keep it open.")
				err = nil
			}
			c.resp.includePages()
			return err
		})
	t.answersDialogs = true
	t.selects = true // closing the selected page selects another
	return t
}

type navigateArgs struct {
	PageID      int    `json:"pageId,omitempty" jsonschema:"The ID of the page to act on. Defaults to the selected page."`
	Type        string `json:"type,omitempty" jsonschema:"Navigate the page by URL, back or forward in history, or reload."`
	URL         string `json:"url,omitempty" jsonschema:"Target URL (only type=url)"`
	IgnoreCache bool   `json:"ignoreCache,omitempty" jsonschema:"Whether to ignore cache on reload."`
	// HandleBeforeUnload answers only beforeunload dialogs; any other dialog
	// the navigation meets is reported to the agent.
	HandleBeforeUnload string `json:"handleBeforeUnload,omitempty" jsonschema:"Whether to auto accept or beforeunload dialogs triggered by this navigation. Default is accept."`
	InitScript         string `json:"initScript,omitempty" jsonschema:"A JavaScript script to be executed on each new document before any other scripts for the next navigation."`
	Timeout            int    `json:"timeout,omitempty" jsonschema:"Maximum wait time in milliseconds. If set to 0, the default timeout will be used."`
}

func (s *Server) navigatePage() tool {
	t := newTool("navigate_page", "Navigates the currently selected page to a URL.", pageScope,
		func(ctx context.Context, c *call, a *navigateArgs) error {
			timeout := ms(a.Timeout, browser.DefaultNavigationTimeout)
			typ := a.Type
			if typ == "" {
				typ = "url"
				if a.URL == "" {
					return &argError{"navigate_page needs a url, or a type of back, forward or reload"}
				}
			}
			accept := true
			switch a.HandleBeforeUnload {
			case "", "accept":
			case "dismiss":
				accept = false
			default:
				return &argError{fmt.Sprintf("invalid handleBeforeUnload %q: want accept or dismiss", a.HandleBeforeUnload)}
			}
			var beforeUnload bool
			opts := []browser.NavOption{browser.HandleBeforeUnload(accept, &beforeUnload)}
			if a.InitScript != "" {
				opts = append(opts, browser.InitScript(a.InitScript))
			}
			from := c.page.URL()
			progressFrom(ctx).phase("waiting for the page to load") // progress.go
			var err error
			switch typ {
			case "url":
				if a.URL == "" {
					return &argError{`navigate_page with type "url" needs a url`}
				}
				err = c.page.Navigate(ctx, a.URL, timeout, opts...)
				c.resp.say("Successfully navigated to %s.", a.URL)
			case "back":
				err = c.page.History(ctx, -1, timeout, opts...)
				c.resp.say("Successfully navigated back to %s.", c.page.URL())
			case "forward":
				err = c.page.History(ctx, +1, timeout, opts...)
				c.resp.say("Successfully navigated forward to %s.", c.page.URL())
			case "reload":
				err = c.page.Reload(ctx, a.IgnoreCache, timeout, opts...)
				c.resp.say("Successfully reloaded the page.")
			default:
				return &argError{fmt.Sprintf("invalid type %q: want url, back, forward or reload", typ)}
			}
			if beforeUnload && !accept {
				// The page stays: what the agent asked for, not a failure.
				c.resp.lines = []string{fmt.Sprintf("Stayed on %s: the page asked to confirm leaving it.", from), "Dismissed a beforeunload dialog."}
				c.resp.includePages()
				return nil
			}
			if beforeUnload {
				c.resp.say("Accepted a beforeunload dialog.")
			}
			if err != nil && !isDialog(err) {
				c.resp.failed(c.page, a.URL, err)
				return err
			}
			c.resp.includePages()
			return nil
		})
	t.answersDialogs = true // a navigation away is one way out of a dialog
	return t
}

// isDialog reports an action that opened a dialog: a success, reported with
// the dialog.
func isDialog(err error) bool {
	var d *browser.DialogOpenedError
	return errors.As(err, &d)
}
