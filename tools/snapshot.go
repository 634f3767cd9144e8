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
}

func (s *Server) takeSnapshot() tool {
	return newTool("take_snapshot", "Take a text snapshot of the currently selected page based on the a11y tree. The snapshot lists page elements along with a unique identifier (uid). Always use the latest snapshot. Prefer taking a snapshot over taking a screenshot.", pageScope,
		func(ctx context.Context, c *call, a *snapshotArgs) error {
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
}

func (s *Server) waitFor() tool {
	return newTool("wait_for", "Wait for the specified text to appear on the selected page.", pageScope,
		func(ctx context.Context, c *call, a *waitForArgs) error {
			if len(a.Text) == 0 {
				return &argError{"wait_for needs at least one text to wait for"}
			}
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
