package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pagemux/pagemux/snapshot"
)

func (s *Server) snapshotTools() []tool {
	return []tool{
		s.waitFor(),
		s.takeSnapshot(),
	}
}

type pageArg struct {
	PageID int `json:"pageId,omitempty" jsonschema:"The ID of the page to act on. Defaults to the selected page."`
}

type snapshotArgs struct {
	pageArg
	Verbose  bool   `json:"verbose,omitempty" jsonschema:"Whether to include all possible information available in the full a11y tree. Default is false."`
	FilePath string `json:"filePath,omitempty" jsonschema:"The absolute path, or a path relative to the workspace (its first root; never the server's working directory), to save the snapshot to instead of attaching it to the response."`
	// Mode and UID are pagemux's own (incremental.go).
	Mode string `json:"mode,omitempty" jsonschema:"full: the whole tree. incremental: after your first snapshot of the page's document, only what changed since your last snapshot of it: lines added (+), removed (-), changed (~) or moved (>), with their uids, each run of unchanged lines folded into one; a new document (after a navigation) gets the whole tree. Default: the server's --snapshot-mode, full unless set. A filePath always gets the whole tree."`
	UID  string `json:"uid,omitempty" jsonschema:"The uid of an element of the latest snapshot: answer with that element and everything below it (neither mode applies; too big for the answer, it is outlined)."`
	To   string `json:"to,omitempty" jsonschema:"With uid: the uid of a later sibling of that element, or of a node below one: answer with the run of siblings from uid to that sibling, each with everything below it, as an outline's fold line or an incremental answer's folded lines name a run."`
	formatArg
}

// formatArg is the snapshot format argument of take_snapshot and wait_for;
// answers with includeSnapshot follow --snapshot-format.
type formatArg struct {
	Format string `json:"format,omitempty" jsonschema:"default: the text as chrome-devtools-mcp writes it. compact: the same nodes and uids in fewer tokens: uids spelled e<N> (every tool takes either spelling), one space of indent a level, sibling text lines joined under the first one's uid, a description that repeats the name and a capability word before its state left out, URLs relative to the page. Default: the server's --snapshot-format, default unless set."`
}

// check refuses a format that is neither.
func (a formatArg) check() error {
	if _, err := ParseSnapshotFormat(a.Format); err != nil {
		return &argError{"format " + err.Error()}
	}
	return nil
}

// ParseSnapshotFormat checks a --snapshot-format; "" is
// snapshot.FormatDefault.
func ParseSnapshotFormat(s string) (string, error) {
	switch s {
	case "", snapshot.FormatDefault:
		return snapshot.FormatDefault, nil
	case snapshot.FormatCompact:
		return s, nil
	}
	return "", fmt.Errorf("%q: want default or compact", s)
}

// compact reports whether the call's snapshots are written compact: its
// own format, else the server's.
func (s *Server) compact(c *call) bool {
	return cmp.Or(c.resp.snapshotFormat, s.snapshotFormat) == snapshot.FormatCompact
}

// compactSections rewrites the snapshot sections of an answer (a snapshot,
// a part of one, an incremental answer's changes; outlined or cut as they
// were in the default text) in the compact format, when the call's is.
// What reads snapshot text (incremental answers, outlines, the agents' last
// snapshots, the rules' element names) reads the default text: compact is
// how the answer is written, last.
func (s *Server) compactSections(c *call, parts []string) {
	if c.page == nil || !s.compact(c) {
		return
	}
	for i, p := range parts {
		head, _, _ := strings.Cut(p, "\n")
		if strings.HasPrefix(head, snapshotHeading) {
			parts[i] = c.page.UIDs.Compact(p, head == changesHeading, c.page.URL())
		}
	}
}

func (s *Server) takeSnapshot() tool {
	return newTool("take_snapshot", "Take a text snapshot of the currently selected page based on the a11y tree. The snapshot lists page elements along with a unique identifier (uid). Always use the latest snapshot. Prefer taking a snapshot over taking a screenshot.", pageScope,
		func(ctx context.Context, c *call, a *snapshotArgs) error {
			if err := a.check(); err != nil {
				return err
			}
			c.resp.snapshotFormat = a.Format
			if err := c.page.Ready(ctx); err != nil {
				return fmt.Errorf("could not take a snapshot: %w", err)
			}
			// A page that cannot answer fails the call: the snapshot is all
			// it returns.
			if err := c.page.Usable(); err != nil {
				return fmt.Errorf("could not take a snapshot: %w", err)
			}
			if a.FilePath == "" && a.UID == "" {
				c.resp.includeSnapshot(a.Verbose)
				c.resp.snapshotMode = a.Mode
				return nil
			}
			if a.To != "" && a.UID == "" {
				return &argError{"to names the last of a run of siblings: pass uid too, the first of them"}
			}
			if a.UID != "" {
				// Run reads the default text, spelled as it spells uids.
				a.UID, a.To = c.page.UIDs.Canonical(a.UID), c.page.UIDs.Canonical(a.To)
				// Fail at once on a uid that was never this document's.
				for _, uid := range []string{a.UID, a.To} {
					if _, err := c.page.UIDs.Lookup(uid); err != nil && uid != "" {
						return &argError{err.Error()}
					}
				}
			}
			if a.FilePath != "" {
				if _, err := s.files.output(ctx, a.FilePath); err != nil {
					return err
				}
			}
			snap, err := c.page.Snapshot(ctx, a.Verbose)
			if err != nil {
				return fmt.Errorf("could not take a snapshot: %w", err)
			}
			text := snap.Text
			if a.UID != "" {
				sub, err := snapshot.ParseTree(snap.Text).Run(a.UID, cmp.Or(a.To, a.UID))
				if err != nil {
					return &argError{err.Error()}
				}
				text = sub
				if a.FilePath == "" {
					// The agent was shown part of the page: its last
					// snapshot of the whole page stays what incremental
					// answers compare with.
					c.resp.withSnapshot = true
					what := "uid=" + a.UID + " and below"
					if a.To != "" {
						what = "uid=" + a.UID + " to uid=" + a.To + ", and below"
					}
					c.resp.scoped = fmt.Sprintf("%s (%s)\n%s", snapshotHeading, what, strings.TrimSuffix(sub, "\n"))
					return nil
				}
			} else {
				s.seen.swap(s.seenKeyOf(ctx, c), seenSnapshot{document: snap.Document, verbose: a.Verbose, text: snap.Text})
			}
			if s.compact(c) {
				text = c.page.UIDs.Compact(text, false, c.page.URL())
			}
			full, err := s.files.write(ctx, a.FilePath, []byte(text))
			if err != nil {
				return err
			}
			c.resp.say("Saved snapshot to %s.", full)
			return nil
		})
}

// defaultWaitTimeout is wait_for's timeout when none is given, as in
// chrome-devtools-mcp.
const defaultWaitTimeout = 30 * time.Second

type waitForArgs struct {
	pageArg
	Text    []string `json:"text" jsonschema:"Non-empty list of texts. Resolves when any value appears on the page."`
	Timeout int      `json:"timeout,omitempty" jsonschema:"Maximum wait time in milliseconds. If set to 0, the default timeout will be used."`
	formatArg
}

func (s *Server) waitFor() tool {
	return newTool("wait_for", "Wait for the specified text to appear on the selected page.", pageScope,
		func(ctx context.Context, c *call, a *waitForArgs) error {
			if len(a.Text) == 0 {
				return &argError{"wait_for needs at least one text to wait for"}
			}
			if err := a.check(); err != nil {
				return err
			}
			c.resp.snapshotFormat = a.Format
			progressFrom(ctx).phase("waiting for the text to appear") // progress.go
			if _, err := c.page.WaitForText(ctx, a.Text, ms(a.Timeout, defaultWaitTimeout)); err != nil {
				return err
			}
			quoted, _ := json.Marshal(a.Text)
			c.resp.say("Element matching one of %s found.", quoted)
			c.resp.includeSnapshot(false)
			return nil
		})
}
