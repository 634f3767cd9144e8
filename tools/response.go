package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/snapshot"
)

// response collects what a tool says. The Guard middleware turns it into one
// text item, sections in chrome-devtools-mcp's order, then the images.
type response struct {
	lines        []string
	withPages    bool
	withSnapshot bool
	verbose      bool
	// snapshotMode is the call's own mode for the snapshot ("" for the
	// server's); scoped, when set, is the section a take_snapshot with uid
	// made, shown instead of a snapshot of the whole page.
	snapshotMode string
	scoped       string
	images       []mcp.Content
	// reportNavigation adds "Page navigated to URL." when the page moved
	// during an action that was not itself a navigation.
	reportNavigation bool
	// answer is the answer as data (answers.go), which the handler fills
	// beside its text; typed is it as published, once the call's work is
	// done, for withAnswer, which may read it while a handler past its
	// bound still runs.
	answer Answer
	typed  atomic.Pointer[Answer]

	// snapshotFormat is the call's own format ("" for the server's).
	snapshotFormat string
}

// publish makes the answer as it is now the call's typed answer.
func (r *response) publish() {
	a := r.answer
	r.typed.Store(&a)
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
func formatPages(pages []PageInfo) string {
	var b strings.Builder
	b.WriteString("## Pages")
	for _, p := range pages {
		fmt.Fprintf(&b, "\n%d: %s", p.ID, pageLabel(p.URL, p.Title))
		if p.Selected {
			b.WriteString(" [selected]")
		}
		if p.IsolatedContext != "" {
			b.WriteString(" isolatedContext=" + p.IsolatedContext)
		}
	}
	return b.String()
}

// maxTitle is the longest title a page list shows whole.
const maxTitle = 50

// pageLabel is "Title (url)", or the url alone for a page whose title is
// Chrome's stand-in (the url itself, or its host).
func pageLabel(url, title string) string {
	if title == "" || titleIsURL(title, url) {
		return url
	}
	if r := []rune(title); len(r) > maxTitle {
		title = string(r[:maxTitle-3]) + "..."
	}
	return fmt.Sprintf("%s (%s)", title, url)
}

// openedPages is the "## Opened pages" section: tabs the call's page opened
// while it ran (a click on a target=_blank link, window.open), so the agent
// learns they exist. They belong to the page's owner.
func (s *Server) openedPages(c *call) string {
	opened := s.browser.OpenedBy(c.page.ID, c.since)
	if len(opened) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Opened pages")
	for _, p := range opened {
		if s.agents != nil {
			s.pageOpened(p, c.page.ID) // agents.go; done already, unless the event is late
		}
		awaitURL(p)
		fmt.Fprintf(&b, "\n%d: %s", p.ID, pageLabel(p.URL(), p.Title()))
	}
	return b.String()
}

// openedURLWait bounds the wait for a tab just opened to report its URL:
// Chrome tells of the target before its URL, and an answer that lists
// "5: " tells the agent nothing (the Node server's list waits too).
const openedURLWait = 2 * time.Second

// awaitURL waits, polling as Chrome gives no sign to wait on here, until p
// has a URL, is closed, or openedURLWait passed.
func awaitURL(p *browser.Page) {
	deadline := time.Now().Add(openedURLWait)
	for p.URL() == "" && !p.Closed() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// snapshotHeading opens the snapshot section.
const snapshotHeading = "## Latest page snapshot"

// titleIsURL reports whether Chrome made the title from the URL, as it
// does for a page without <title> ("127.0.0.1:8080/a.html", "about:blank").
// A title that only appears in the URL, such as "Home" of /Home.html or "D"
// of a data: URL, is a title.
func titleIsURL(title, url string) bool {
	if title == url {
		return true
	}
	_, rest, ok := strings.Cut(url, "://")
	return ok && rest == title
}

// formatDialog is the section for a dialog that blocks the page; its
// typed form is Dialog.
func formatDialog(typ, message string) string {
	return fmt.Sprintf("# Open dialog\n%s: %s.\nCall handle_dialog to handle it before continuing.", typ, message)
}

// render turns what the handler said into the result, adding the sections it
// asked for while the locks are still held.
func (s *Server) render(ctx context.Context, c *call, g *pagelock.Guard) *mcp.CallToolResult {
	r := c.resp
	parts := []string{strings.Join(r.lines, "\n")}
	shown := -1 // the index in parts of a snapshot recorded as the agent's last
	if c.page != nil && r.reportNavigation && !c.page.Closed() {
		if url := c.page.URL(); url != c.startURL {
			parts = append(parts, fmt.Sprintf("Page navigated to %s.", url))
		}
	}
	parts = append(parts, emulationLines(c)...) // emulate.go
	if c.page != nil {
		r.answer.PageID = c.page.ID
	}
	if c.page != nil && !c.page.Closed() {
		if dlg := dialogOf(c.page); dlg != nil {
			r.answer.Dialog = dlg
			parts = append(parts, formatDialog(dlg.Type, dlg.Message))
		} else if r.scoped != "" {
			parts = append(parts, r.scoped)
		} else if r.withSnapshot {
			snap, err := c.page.Snapshot(ctx, r.verbose)
			if err != nil {
				parts = append(parts, "Could not take a snapshot: "+err.Error())
			} else {
				parts = append(parts, s.snapshotSection(ctx, c, snap, r.verbose, r.snapshotMode)) // incremental.go
				shown = len(parts) - 1
			}
		}
	}
	if c.page != nil {
		if opened := s.openedPages(c); opened != "" {
			parts = append(parts, opened)
		}
	}
	parts = append(parts, s.agentNotes(ctx)...) // agents.go
	if r.withPages {
		s.browser.Refresh(ctx)
		parts = append(parts, s.selectionNote(ctx)) // agents.go
		r.answer.Pages = pageInfos(s.pageList(ctx)) // agents.go
		parts = append(parts, formatPages(r.answer.Pages))
	}
	if w := g.Waited(); w > waitNoticeAfter {
		lock, holder := g.WaitedFor()
		parts = append(parts, fmt.Sprintf("Waited %d ms for %s (held by %s)", w.Milliseconds(), lock, s.forAgent(ctx, holder)))
	}
	var nonEmpty []string
	snapAt := -1
	for i, p := range parts {
		if p != "" {
			if i == shown {
				snapAt = len(nonEmpty)
			}
			nonEmpty = append(nonEmpty, p)
		}
	}
	var whole string
	if snapAt >= 0 {
		whole = nonEmpty[snapAt]
	}
	outlineSnapshot(nonEmpty, s.maxOutput)
	capOutput(nonEmpty, s.maxOutput, cutHint(c.req.Params.Name, r.withSnapshot))
	if snapAt >= 0 && nonEmpty[snapAt] != whole {
		s.seen.markPartial(s.seenKeyOf(ctx, c)) // incremental.go
	}
	s.compactSections(c, nonEmpty) // snapshot.go
	text := strings.Join(nonEmpty, "\n")
	if n := len(nonEmpty); n > 0 && strings.HasPrefix(nonEmpty[n-1], snapshotHeading) {
		text += "\n" // chrome-devtools-mcp ends a snapshot with its newline
	}
	content := []mcp.Content{mcp.NewTextContent(text)}
	r.publish()
	return &mcp.CallToolResult{Content: append(content, r.images...)}
}

// DefaultMaxOutput is about how many characters of text a tool result may
// carry, the default of --max-output: a snapshot of a big page is
// megabytes, more than an agent's context holds.
const DefaultMaxOutput = 100_000

// outlineSnapshot writes a whole snapshot (or a uid's subtree) that would
// take the answer past limit as an outline of all of it (snapshot.Outline)
// that fits beside the other parts: its top levels and last regions show,
// each folded part is a line naming the uid that opens it. A snapshot whose
// outline cannot fit is left for capOutput to cut.
func outlineSnapshot(parts []string, limit int) {
	if limit <= 0 {
		return
	}
	total := countRunes(parts)
	if total <= limit {
		return
	}
	for i, p := range parts {
		head, body, _ := strings.Cut(p, "\n")
		if head == changesHeading {
			outlineChanges(parts, i, limit, limit-(total-utf8.RuneCountInString(p)))
			return
		}
		if head != snapshotHeading && !strings.HasPrefix(head, snapshotHeading+" (uid=") {
			continue
		}
		// Lines before the tree (incremental's "Full snapshot (…)") stay.
		lead := ""
		for !strings.HasPrefix(strings.TrimLeft(body, " "), "uid=") && body != "" {
			line, rest, _ := strings.Cut(body, "\n")
			lead, body = lead+line+"\n", rest
		}
		tree := snapshot.ParseTree(body)
		note := fmt.Sprintf("Outlined: the snapshot is %d nodes, %d characters, more than fits in --max-output (%d); each \"… N nodes\" line stands for a folded part and names the uid to open it with take_snapshot uid=…, or pass filePath to save the whole snapshot.",
			tree.Len(), utf8.RuneCountInString(body), limit)
		budget := limit - (total - utf8.RuneCountInString(p)) - len(head) - len(lead) - len(note) - 2
		out, ok := tree.Outline(budget)
		if !ok {
			return
		}
		parts[i] = head + "\n" + lead + note + "\n" + strings.TrimSuffix(out, "\n")
		return
	}
}

// outlineChanges writes parts[i], an incremental answer's changes
// (changesSection) that would take the answer past limit, --max-output, as
// an outline of them (snapshot.OutlineChanges) in room characters: the
// changes first, each folded part a line naming the take_snapshot that
// shows it. Changes whose outline cannot fit are left for capOutput to cut.
func outlineChanges(parts []string, i, limit, room int) {
	head, rest, _ := strings.Cut(parts[i], "\n")
	summary, changes, _ := strings.Cut(rest, "\n")
	note := fmt.Sprintf("Outlined: the changes are %d lines, %d characters, more than fits in --max-output (%d); each \"… N lines\" line stands for a folded part of them and names the take_snapshot uid=… that shows that part of the page as it is now, without marks.",
		strings.Count(changes, "\n")+1, utf8.RuneCountInString(changes), limit)
	budget := room - utf8.RuneCountInString(head) - utf8.RuneCountInString(summary) - utf8.RuneCountInString(note) - 3
	out, ok := snapshot.OutlineChanges(changes+"\n", budget)
	if !ok {
		return
	}
	parts[i] = head + "\n" + summary + "\n" + note + "\n" + strings.TrimSuffix(out, "\n")
}

// capOutput cuts the longest of parts so that the text they make, joined by
// newlines, has at most limit characters (runes), and ends it with a note
// saying how much was cut and hint, what to do instead. Shorter sections,
// such as the page list or a lock-wait notice, stay whole. limit <= 0 is
// no cap. The note itself is not counted.
func capOutput(parts []string, limit int, hint string) {
	if limit <= 0 {
		return
	}
	bytes := len(parts) - 1 // the newlines between them
	for _, p := range parts {
		bytes += len(p)
	}
	if bytes <= limit { // no more runes than bytes
		return
	}
	total := countRunes(parts)
	if total <= limit {
		return
	}
	longest := 0
	for i, p := range parts {
		if len(p) > len(parts[longest]) {
			longest = i
		}
	}
	p := parts[longest]
	keep := max(utf8.RuneCountInString(p)-(total-limit), 0)
	cut := cutRunes(p, keep)
	parts[longest] = cut + "\n" + cutNote("text", total, total-utf8.RuneCountInString(p)+utf8.RuneCountInString(cut), "characters", hint)
}

func countRunes(parts []string) int {
	n := len(parts) - 1
	for _, p := range parts {
		n += utf8.RuneCountInString(p)
	}
	return n
}

// cutRunes is the first n runes of s, ended at the last line break among
// the last 1,000 of them when there is one, so that no line is cut through.
func cutRunes(s string, n int) string {
	end := len(s)
	for i := range s {
		if n == 0 {
			end = i
			break
		}
		n--
	}
	if n > 0 {
		return s
	}
	cut := s[:end]
	if nl := strings.LastIndexByte(cut, '\n'); nl >= 0 && end-nl <= 1000 {
		cut = cut[:nl]
	}
	return cut
}

// cutNote is the line that ends a text cut to fit: how big it is, how
// much of it is shown, and what to do to get all of it. evaluate_script
// says it too.
func cutNote(what string, total, shown int, unit, hint string) string {
	return fmt.Sprintf("… (cut: the %s is %d %s, the first %d shown; %s)", what, total, unit, shown, hint)
}

// cutHint says how to get what a cut result left out, by tool: save it to a
// file where the tool can, else ask for less.
func cutHint(tool string, snapshot bool) string {
	switch tool {
	case "take_snapshot":
		return "pass filePath to save all of it"
	case "evaluate_script":
		return "pass filePath to save all of it, or return a smaller part"
	case "get_network_request":
		return "pass responseFilePath or requestFilePath to save a body whole"
	case "list_console_messages":
		return "ask for less with pageSize and pageIdx, or types"
	case "list_network_requests":
		return "ask for less with pageSize and pageIdx, or resourceTypes"
	case "get_console_message":
		return "the message is too long to show whole; read it in the page with evaluate_script and filePath"
	}
	if snapshot {
		return "call take_snapshot with filePath to save the whole snapshot"
	}
	return "ask for less"
}
