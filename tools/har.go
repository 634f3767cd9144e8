package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// harTools lists the HAR tools: har_start marks where a recording begins,
// har_save writes a page's traffic as HAR 1.2 into the workspace. Both take
// the page's lock (pageScope): har_save fetches bodies from the page.
func (s *Server) harTools() []tool { return []tool{s.harStart(), s.harSave()} }

// harMarks are the starts har_start set: by agent and page, the last reqid
// given out then. A closed page's marks go with it, and a departed
// agent's with it (forget).
type harMarks struct {
	mu sync.Mutex
	m  map[harMarkKey]harMark
}

type harMarkKey struct {
	agent string // agents.Agent.ID; "" without agents
	page  int
}

type harMark struct {
	reqid  int
	marked time.Time
}

// set keeps a mark.
func (h *harMarks) set(k harMarkKey, m harMark) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[harMarkKey]harMark{}
	}
	h.m[k] = m
}

// get returns the mark of an agent on a page (page ids are never reused).
func (h *harMarks) get(k harMarkKey) (harMark, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.m[k]
	return m, ok
}

// forget drops the marks gone matches: a closed page's, a departed
// agent's.
func (h *harMarks) forget(gone func(harMarkKey) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	maps.DeleteFunc(h.m, func(k harMarkKey, _ harMark) bool { return gone(k) })
}

// markKey is the key of the calling agent's mark on the call's page.
func (s *Server) markKey(ctx context.Context, c *call) harMarkKey {
	k := harMarkKey{page: c.page.ID}
	if a, ok := s.agentOf(ctx); ok {
		k.agent = a.ID
	}
	return k
}

func (s *Server) harStart() tool {
	return newTool("har_start", "Marks the start of a HAR recording on the page: a later har_save writes the requests the page makes from now on, across navigations (as long as pagemux keeps them: the current document and the 3 before it, at most 1000 requests each). Calling it again moves the start. Chrome drops a document's response bodies when the page navigates away: call har_save before that to keep them.", pageScope,
		func(ctx context.Context, c *call, a *pageArg) error {
			// Attaches to a page met but not used yet: recording starts here.
			if err := c.page.Ready(ctx); err != nil {
				return err
			}
			last := c.page.Network().LastReqID()
			s.harMarks.set(s.markKey(ctx, c), harMark{reqid: last, marked: time.Now()})
			c.resp.say("Recording the traffic of page %d from now on (requests after reqid=%d). Call har_save to write it as HAR.", c.page.ID, last)
			return nil
		})
}

type harSaveArgs struct {
	pageArg
	Filename                 string `json:"filename,omitempty" jsonschema:"File name to save the HAR to, a path relative to the workspace (its first root) or absolute inside it. Defaults to page-{timestamp}.har."`
	Since                    string `json:"since,omitempty" jsonschema:"Which requests: \"start\" (those since har_start on this page), \"document\" (those of the page's current document; with includePreservedRequests those of the 3 documents before it too), or a reqid from list_network_requests, as a string such as \"12\" (that request and every later one). Defaults to \"start\" after har_start (unless includePreservedRequests is set), else \"document\"."`
	IncludePreservedRequests bool   `json:"includePreservedRequests,omitempty" jsonschema:"With since \"document\": also the requests of the 3 documents before the current one."`
	Content                  string `json:"content,omitempty" jsonschema:"\"embed\" (default) puts each response body Chrome still holds into the HAR, text as is and binary as base64, cut at maxBodySize; \"omit\" leaves response bodies out. Request bodies are always included."`
	MaxBodySize              int    `json:"maxBodySize,omitempty" jsonschema:"The most bytes of one body the HAR keeps; longer ones are cut, with a comment saying so. Default 1048576 (1 MiB), at most 10485760."`
}

// maxHARBodyArg is the largest maxBodySize: Chrome keeps no more of one
// resource by default either.
const maxHARBodyArg = 10 << 20

func (s *Server) harSave() tool {
	t := newTool("har_save", "Saves the page's network traffic as a HAR 1.2 file in the workspace: requests and responses with headers, cookies, timings and bodies (up to a cap), from what pagemux recorded since it attached to the page. For a human or a HAR viewer (Chrome DevTools' network panel imports it).", pageScope,
		func(ctx context.Context, c *call, a *harSaveArgs) error {
			if err := c.page.Ready(ctx); err != nil {
				return err
			}
			if err := checkHARArgs(a); err != nil {
				return err
			}
			name := a.Filename
			if name == "" {
				name = "page-" + time.Now().UTC().Format("2006-01-02T15-04-05.000Z") + ".har"
			}
			// Refuse a bad path before the work, not after.
			if _, err := s.files.output(ctx, name); err != nil {
				return err
			}
			sel, err := s.harSelection(ctx, c, a)
			if err != nil {
				return err
			}
			h, st, err := c.page.Capture().HAR(ctx, browser.HAROptions{
				Requests: sel.reqs, Content: a.Content != "omit", MaxBody: a.MaxBodySize,
				Creator: browser.HARCreator{Name: "pagemux", Version: Version}, Comment: sel.comment(a),
			})
			if err != nil {
				return err
			}
			full, size, err := s.writeHAR(ctx, name, h)
			if err != nil {
				return err
			}
			harAnswer(c, full, size, sel, st, a)
			return nil
		})
	patchSchema(&t, map[string]map[string]any{
		"content":     {"enum": []string{"embed", "omit"}, "default": "embed"},
		"maxBodySize": {"minimum": 1, "maximum": maxHARBodyArg},
	})
	return t
}

// writeHAR saves the archive to a checked path of the workspace and returns
// where it went and its size as written (secrets masked, files.go).
func (s *Server) writeHAR(ctx context.Context, name string, h *browser.HAR) (string, int64, error) {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return "", 0, fmt.Errorf("encode the HAR: %w", err)
	}
	full, err := s.files.write(ctx, name, data)
	if err != nil {
		return "", 0, err
	}
	fi, err := os.Stat(full)
	if err != nil {
		return "", 0, fmt.Errorf("read back %s: %w", full, err)
	}
	return full, fi.Size(), nil
}

// checkHARArgs refuses what the schema lets through.
func checkHARArgs(a *harSaveArgs) error {
	if a.Content != "" && a.Content != "embed" && a.Content != "omit" {
		return &argError{fmt.Sprintf("invalid content %q: want \"embed\" or \"omit\"", a.Content)}
	}
	if a.MaxBodySize < 0 || a.MaxBodySize > maxHARBodyArg {
		return &argError{fmt.Sprintf("invalid maxBodySize %d: want 1 to %d bytes", a.MaxBodySize, maxHARBodyArg)}
	}
	if a.IncludePreservedRequests && a.Since != "" && a.Since != "document" {
		return &argError{fmt.Sprintf("includePreservedRequests goes with since \"document\", not %q: since \"start\" and a reqid already span navigations", a.Since)}
	}
	return nil
}

// harSelection is the requests a har_save writes, and what it knows of
// those missing.
type harSelection struct {
	reqs    []browser.Request
	since   string // what the answer says the requests are
	lost    int    // requests of the span no longer kept
	partial bool   // recording began after a document of the span started
}

// harSelection picks the requests a call's since names.
func (s *Server) harSelection(ctx context.Context, c *call, a *harSaveArgs) (harSelection, error) {
	n := c.page.Network()
	since := a.Since
	mark, marked := s.harMarks.get(s.markKey(ctx, c))
	if since == "" {
		since = "document"
		if marked && !a.IncludePreservedRequests {
			since = "start"
		}
	}
	switch {
	case since == "document":
		reqs, info := n.List(a.IncludePreservedRequests)
		what := "the current document"
		if a.IncludePreservedRequests {
			what = "the current document and those kept before it"
		}
		return harSelection{reqs: reqs, since: what, lost: info.Dropped, partial: info.Partial}, nil
	case since == "start":
		if !marked {
			return harSelection{}, &argError{fmt.Sprintf("no har_start on page %d: call har_start first, then har_save once the traffic you want happened; or pass since \"document\" for what the page's document made", c.page.ID)}
		}
		reqs, lost, info := n.Since(mark.reqid)
		return harSelection{reqs: reqs, since: "har_start at " + mark.marked.UTC().Format("15:04:05") + " UTC", lost: lost, partial: info.Partial}, nil
	}
	id, err := strconv.Atoi(since)
	if err != nil || id < 1 || strings.TrimSpace(since) != since {
		return harSelection{}, &argError{fmt.Sprintf("invalid since %q: want \"start\", \"document\" or a reqid (a whole number from list_network_requests)", a.Since)}
	}
	if last := n.LastReqID(); id > last {
		return harSelection{}, &argError{fmt.Sprintf("no request with reqid %d on page %d yet (the last is %d); call list_network_requests for the ids", id, c.page.ID, last)}
	}
	reqs, lost, info := n.Since(id - 1)
	return harSelection{reqs: reqs, since: fmt.Sprintf("reqid=%d", id), lost: lost, partial: info.Partial}, nil
}

// comment is the HAR log's comment: where the archive comes from and what
// it lacks.
func (sel harSelection) comment(a *harSaveArgs) string {
	notes := []string{fmt.Sprintf("Written by pagemux from its network collector (requests since %s). It keeps the requests of a page's current document and the %d before it, at most %d each, from the moment pagemux attached to the page; response bodies are those Chrome still held when the HAR was saved.",
		sel.since, browser.PreservedDocuments, browser.BucketCap)}
	if sel.lost > 0 {
		notes = append(notes, fmt.Sprintf("%d requests of this span are missing: they were dropped with older documents or past %d requests per document.", sel.lost, browser.BucketCap))
	}
	if sel.partial {
		notes = append(notes, "Recording began after a document here had started: its earlier requests are missing.")
	}
	if a.Content == "omit" {
		notes = append(notes, "Response bodies were left out (content \"omit\").")
	}
	return strings.Join(notes, " ")
}

// maxListedMissing is how many reqids an answer names for one reason a
// body was not available.
const maxListedMissing = 20

// harAnswer says what was saved and what it lacks.
func harAnswer(c *call, full string, size int64, sel harSelection, st browser.HARStats, a *harSaveArgs) {
	c.resp.say("Saved the HAR of page %d to %s (%d bytes): %d requests, since %s.", c.page.ID, full, size, st.Entries, sel.since)
	if sel.lost > 0 {
		c.resp.say("%d requests of that span are no longer kept (pagemux keeps the current document and the %d before it, at most %d requests each) and are missing.", sel.lost, browser.PreservedDocuments, browser.BucketCap)
	}
	if sel.partial {
		c.resp.say("Recording began after a document had started (pagemux attached to the page late): its earlier requests are missing.")
	}
	if a.Content == "omit" {
		c.resp.say("Response bodies left out (content \"omit\").")
		return
	}
	c.resp.say("Response bodies: %d embedded (%d cut at %d bytes), %d not available.", st.Bodies, st.Truncated, cmp.Or(a.MaxBodySize, browser.DefaultHARMaxBody), len(st.Unavailable))
	byReason := map[string][]int{}
	for id, why := range st.Unavailable {
		byReason[why] = append(byReason[why], id)
	}
	for _, why := range slices.Sorted(maps.Keys(byReason)) {
		ids := slices.Sorted(slices.Values(byReason[why]))
		c.resp.say("- %s: %s", why, reqidList(ids))
	}
	if len(st.Unavailable) > 0 {
		c.resp.say("Save before navigating to keep a document's bodies: Chrome drops them with the document.")
	}
}

// reqidList names reqids, the first maxListedMissing of them.
func reqidList(ids []int) string {
	var parts []string
	for i, id := range ids {
		if i == maxListedMissing {
			parts = append(parts, fmt.Sprintf("and %d more", len(ids)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("reqid=%d", id))
	}
	return strings.Join(parts, ", ")
}
