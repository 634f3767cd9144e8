package tools

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/page"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/snapshot"
)

// Incremental snapshots: in incremental mode (--snapshot-mode, or
// take_snapshot's mode), a snapshot after the agent's first one of a
// document answers with what changed since the agent's last one. The
// server keeps, per agent and page, the whole text of the last snapshot it
// made for that agent, not only the part the answer showed (an outline, on
// a page past --max-output); snapshot.Diff compares the two. Where the agent
// was shown an outline, the diff's folded runs may hold lines it never saw
// whole: the answer says so, and how to open them. The uids are the page's
// (one registry per page, by DOM node per document), so two agents on one
// page see the same uids, and each is told what changed since its own last
// snapshot, whoever changed it.
//
// Memory: one text per agent and page, the latest; a navigation of the
// page's main frame drops the texts of its old document (keeping that there
// was one), and the page's closing or the agent's leaving drops the record.

// The snapshot modes, of --snapshot-mode and take_snapshot's mode.
const (
	// SnapshotFull answers with the whole tree, as chrome-devtools-mcp does.
	SnapshotFull = "full"
	// SnapshotIncremental answers with what changed since the agent's last
	// snapshot of the page's document.
	SnapshotIncremental = "incremental"
)

// ParseSnapshotMode checks a --snapshot-mode; "" is SnapshotFull.
func ParseSnapshotMode(s string) (string, error) {
	switch s {
	case "", SnapshotFull:
		return SnapshotFull, nil
	case SnapshotIncremental:
		return s, nil
	}
	return "", fmt.Errorf("%q: want full or incremental", s)
}

// seenKey names whose last snapshot of which page.
type seenKey struct {
	viewer string // the agent and its session's generation; "" on stdio
	page   int
}

// seenSnapshot is the last snapshot of a page made for an agent's answer,
// whole, whatever part of it the answer showed.
type seenSnapshot struct {
	document int // snapshot.Snapshot.Document
	verbose  bool
	// text is the whole snapshot, whatever part of it the answer showed;
	// "" once the page left the document (dropTexts).
	text string
	// partial: the agent has not seen all of text: the answer was outlined
	// or cut (--max-output), or was a diff against a text it had not seen
	// all of. A diff against it says its folds may be news.
	partial bool
}

// seenSnapshots is every agent's last snapshot of every page.
type seenSnapshots struct {
	mu sync.Mutex
	m  map[seenKey]seenSnapshot
}

// swap records now as what key was shown last, and returns what it was
// shown before.
func (s *seenSnapshots) swap(key seenKey, now seenSnapshot) (seenSnapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[seenKey]seenSnapshot{}
	}
	prev, ok := s.m[key]
	s.m[key] = now
	return prev, ok
}

// markPartial notes that key's last snapshot was not shown whole.
func (s *seenSnapshots) markPartial(key seenKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seen, ok := s.m[key]; ok {
		seen.partial = true
		s.m[key] = seen
	}
}

// dropTexts frees the texts of page's records, of a document it left; the
// records stay, so that the next answer says why it is whole.
func (s *seenSnapshots) dropTexts(page int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, seen := range s.m {
		if k.page == page {
			seen.text = ""
			s.m[k] = seen
		}
	}
}

// observe is a page observer (browser.ObservePages): a navigation of the
// page's main frame drops its texts, of a document it left.
func (s *seenSnapshots) observe(p *browser.Page) func(ev any) {
	return func(ev any) {
		if nav, ok := ev.(*page.EventFrameNavigated); ok && nav.Frame.ParentID == "" {
			s.dropTexts(p.ID)
		}
	}
}

// forget drops the snapshots of which match.
func (s *seenSnapshots) forget(which func(seenKey) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if which(k) {
			delete(s.m, k)
		}
	}
}

// viewer names the call's agent for seenKey. A new session of the same
// agent (a restarted client, which took over its pages) has not seen the
// old session's snapshots, so the generation is part of it.
func (s *Server) viewer(ctx context.Context) string {
	if a, ok := s.agentOf(ctx); ok {
		return fmt.Sprintf("%s#%d", a.ID, a.Gen)
	}
	return ""
}

// seenKeyOf names the call's agent's last snapshot of the call's page.
func (s *Server) seenKeyOf(ctx context.Context, c *call) seenKey {
	return seenKey{s.viewer(ctx), c.page.ID}
}

// snapshotSection is the snapshot section of a call's answer: the whole
// tree in full mode, what changed since the agent's last snapshot of the
// document in incremental mode. mode "" is the server's. It records snap as
// the agent's last snapshot of the page either way.
func (s *Server) snapshotSection(ctx context.Context, c *call, snap *snapshot.Snapshot, verbose bool, mode string) string {
	if mode == "" {
		mode = s.snapshotMode
	}
	key := s.seenKeyOf(ctx, c)
	prev, had := s.seen.swap(key, seenSnapshot{document: snap.Document, verbose: verbose, text: snap.Text})
	body := strings.TrimSuffix(snap.Text, "\n")
	if mode != SnapshotIncremental {
		return snapshotHeading + "\n" + body
	}
	var why string
	switch {
	case !had:
		why = "your first snapshot of this page"
	case prev.document != snap.Document || prev.text == "":
		why = "the page loaded a new document since your last snapshot, so every uid is new"
	case prev.verbose != verbose:
		why = "your last snapshot of this page was " + map[bool]string{true: "verbose", false: "not verbose"}[prev.verbose]
	default:
		ch, ok := snapshot.Diff(snapshot.ParseTree(prev.text), snapshot.ParseTree(snap.Text))
		switch {
		case !ok:
			why = "the page's root changed since your last snapshot"
		case len(ch.Text()) >= len(snap.Text) && !ch.None():
			why = "most of the page changed since your last snapshot"
		default:
			// What the agent has not seen of prev, it has not seen of
			// this one either: the folds are the same lines.
			if prev.partial {
				s.seen.markPartial(key)
			}
			return changesSection(ch, prev.partial)
		}
	}
	return fmt.Sprintf("%s\nFull snapshot (%s); the next ones show what changed.\n%s", snapshotHeading, why, body)
}

// changesSection is the snapshot section of an incremental answer: ch, and
// how to read it. unseen: the earlier snapshot was not shown whole, so
// its folds may hold lines the agent never saw.
func changesSection(ch *snapshot.Changes, unseen bool) string {
	if ch.None() {
		return fmt.Sprintf("%s (no change since your last one)\n%s.", snapshotHeading, ch.Summary())
	}
	legend := incrementalLegend
	if unseen {
		legend = incrementalLegendUnseen
	}
	return fmt.Sprintf("%s\n%s. %s\n%s", changesHeading, ch.Summary(), legend, strings.TrimSuffix(ch.Text(), "\n"))
}

// changesHeading opens the snapshot section of an incremental answer with
// changes.
const changesHeading = snapshotHeading + " (changes since your last one)"

// incrementalLegend says how to read an incremental answer.
const incrementalLegend = `+ added, - removed, ~ changed, > moved here; "… N lines unchanged" are those lines of your last snapshot; mode "full" gives the whole tree.`

// incrementalLegendUnseen is incrementalLegend after a snapshot that did
// not fit in --max-output: an outline's folds are lines the agent has not
// seen, and this answer does not open them.
const incrementalLegendUnseen = `+ added, - removed, ~ changed, > moved here; "… N lines unchanged (uid=A to uid=B)" are lines as they were at your last snapshot, which did not fit in --max-output, so they may be in its outline's folds, unseen: take_snapshot uid=A to=B shows them; mode "full" gives the whole tree, outlined.`
