package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
)

// response collects what a tool says. The Guard middleware turns it into one
// text item, sections in chrome-devtools-mcp's order, then the images.
type response struct {
	lines        []string
	withPages    bool
	withSnapshot bool
	verbose      bool
	images       []mcp.Content
	// reportNavigation adds "Page navigated to URL." when the page moved
	// during an action that was not itself a navigation.
	reportNavigation bool
}

// say adds a line of text.
func (r *response) say(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// includePages appends the page list.
func (r *response) includePages() { r.withPages = true }

// includeSnapshot appends a fresh snapshot of the page.
func (r *response) includeSnapshot(verbose bool) {
	r.withSnapshot = true
	r.verbose = r.verbose || verbose
}

// image attaches an image item.
func (r *response) image(data []byte, mime string) {
	r.images = append(r.images, mcp.NewImageContent(base64.StdEncoding.EncodeToString(data), mime))
}

// formatPages is the "## Pages" section.
func formatPages(pages []*browser.Page, selected int) string {
	var b strings.Builder
	b.WriteString("## Pages")
	for _, p := range pages {
		fmt.Fprintf(&b, "\n%d: %s", p.ID, pageLabel(p))
		if p.ID == selected {
			b.WriteString(" [selected]")
		}
		if name := p.IsolatedContext(); name != "" {
			b.WriteString(" isolatedContext=" + name)
		}
	}
	return b.String()
}

// maxTitle is the longest title a page list shows whole.
const maxTitle = 50

// pageLabel is "Title (url)", or the url alone for a page whose title is
// Chrome's stand-in (the url itself, or its host).
func pageLabel(p *browser.Page) string {
	url, title := p.URL(), p.Title()
	if title == "" || strings.Contains(url, title) {
		return url
	}
	if r := []rune(title); len(r) > maxTitle {
		title = string(r[:maxTitle-3]) + "..."
	}
	return fmt.Sprintf("%s (%s)", title, url)
}

// formatDialog is the section for a dialog that blocks the page.
func formatDialog(typ, message string) string {
	return fmt.Sprintf("# Open dialog\n%s: %s.\nCall handle_dialog to handle it before continuing.", typ, message)
}

// render turns what the handler said into the result, adding the sections it
// asked for while the locks are still held.
func (s *Server) render(ctx context.Context, c *call, g *pagelock.Guard) *mcp.CallToolResult {
	r := c.resp
	parts := []string{strings.Join(r.lines, "\n")}
	if c.page != nil && r.reportNavigation && !c.page.Closed() {
		if url := c.page.URL(); url != c.startURL {
			parts = append(parts, fmt.Sprintf("Page navigated to %s.", url))
		}
	}
	parts = append(parts, emulationLines(c)...) // emulate.go
	if c.page != nil && !c.page.Closed() {
		if dlg := c.page.Dialog(); dlg != nil {
			parts = append(parts, formatDialog(string(dlg.Type), dlg.Message))
		} else if r.withSnapshot {
			snap, err := c.page.Snapshot(ctx, r.verbose)
			if err != nil {
				parts = append(parts, "Could not take a snapshot: "+err.Error())
			} else {
				parts = append(parts, "## Latest page snapshot\n"+strings.TrimSuffix(snap.Text, "\n"))
			}
		}
	}
	if r.withPages {
		s.browser.Refresh(ctx)
		if moved, now := s.browser.TakeSelectionNote(); moved {
			parts = append(parts, fmt.Sprintf("Note: the previously selected page was closed. Page %d is now selected.", now))
		}
		parts = append(parts, formatPages(s.browser.Pages(), s.browser.SelectedID()))
	}
	if w := g.Waited(); w > waitNoticeAfter && c.page != nil {
		parts = append(parts, fmt.Sprintf("Waited %d ms for page %d", w.Milliseconds(), c.page.ID))
	}
	var nonEmpty []string
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	content := []mcp.Content{mcp.NewTextContent(strings.Join(nonEmpty, "\n"))}
	return &mcp.CallToolResult{Content: append(content, r.images...)}
}
