package snapshot

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/cdp"
)

// This file keeps a page's uids: it numbers snapshots, hands out uids and
// resolves them back to DOM nodes.

// Error is the type of the sentinel errors of this package.
type Error string

// Error satisfies the error interface.
func (e Error) Error() string { return string(e) }

// The uid errors.
const (
	// ErrUnknownUID is wrapped by Lookup for a uid that was never handed out
	// for the current document, or that is not a uid at all.
	ErrUnknownUID Error = "unknown uid"
	// ErrStaleUID is wrapped by Lookup for a uid that was handed out before
	// the last main-frame navigation.
	ErrStaleUID Error = "stale uid"
)

// uidError is the error of Lookup: the message tells the agent what to do
// next, and Unwrap gives the sentinel.
type uidError struct {
	uid  string
	kind Error
}

func (e *uidError) Error() string {
	uid := e.uid
	if _, ok := parseUID(uid); !ok && !isCompactUID(uid) {
		uid = strconv.Quote(uid)
	}
	if e.kind == ErrStaleUID {
		return "uid " + uid + " is from before the page navigated; take a new snapshot"
	}
	return "no element with uid " + uid + " in the latest snapshot; take a new snapshot to get current uids"
}

func (e *uidError) Unwrap() error { return e.kind }

// maxRememberedNodes bounds the uids one document keeps for nodes that were
// not in the latest snapshot. Such nodes are kept (a node hidden now or left
// out of a non-verbose snapshot is still in the DOM and should get its uid
// back), but a page that keeps replacing its content would otherwise grow
// the registry until it navigates.
const maxRememberedNodes = 50_000

// uidKey is a parsed uid: "<seq>_<n>".
type uidKey struct{ seq, n int }

func (k uidKey) append(b []byte) []byte {
	b = strconv.AppendInt(b, int64(k.seq), 10)
	b = append(b, '_')
	return strconv.AppendInt(b, int64(k.n), 10)
}

// parseUID parses "<seq>_<n>": decimal digits only, seq from 1.
func parseUID(s string) (uidKey, bool) {
	a, b, ok := strings.Cut(s, "_")
	seq, ok1 := parseUIDDigits(a)
	n, ok2 := parseUIDDigits(b)
	if !ok || !ok1 || !ok2 || seq < 1 {
		return uidKey{}, false
	}
	return uidKey{seq, n}, true
}

func parseUIDDigits(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// axRef names the DOM node of an AX node. Backend node ids are unique only
// within one renderer process, so the frame of the document tells nodes of
// out-of-process iframes apart. An AX node without a DOM node of its own
// (InlineTextBox, the text of a CSS ::before) is named by its nearest
// ancestor that has one and its rank among such nodes below it, so that it
// too keeps its uid and resolves to something an agent can act on.
// chrome-devtools-mcp gives all of them one shared uid that resolves to
// nothing.
type axRef struct {
	frame   cdp.FrameID
	backend cdp.BackendNodeID
	rank    int32 // 0 for a node with a DOM node of its own
}

type uidEntry struct {
	uid      uidKey
	lastSeen int // seq of the latest snapshot that showed the node
}

// UIDs is one page's registry of snapshot uids: it numbers snapshots, hands
// out uids, and resolves them back to DOM nodes. Safe for concurrent use.
// It talks to no browser: the caller fetches the accessibility tree and
// calls Reset when the page navigates.
type UIDs struct {
	mu       sync.Mutex
	seq      int   // sequence number of the latest snapshot
	resetSeq int   // latest seq taken before the last Reset
	resets   int   // how many times Reset was called: the document's number
	minted   []int // minted[seq-1]: how many uids that snapshot handed out
	// firsts[seq-1] is how many uids the snapshots before seq handed out:
	// the ordinal of that snapshot's first uid, which a compact uid
	// spells (compact.go).
	firsts []int
	byNode map[axRef]*uidEntry
	byUID  map[uidKey]axRef
	// fromPage says the latest snapshot had nodes of a tree computed in
	// the page (refs, see PageRef).
	fromPage bool
	// lastText is the latest snapshot's text of the current document, for
	// Element.
	lastText string
}

// Document numbers the current document: it goes up with every Reset, as
// Snapshot.Document does.
func (u *UIDs) Document() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.resets
}

// Element returns the role and name of the node uid names, as the latest
// snapshot of the current document showed it; ok false when that snapshot
// did not show it (or there is none). The text is searched, not indexed:
// a snapshot pays nothing for it, and a lookup costs a scan of the text.
func (u *UIDs) Element(uid string) (role, name string, ok bool) {
	u.mu.Lock()
	text := u.lastText
	if k, compact := u.parseCompactLocked(uid); compact {
		uid = string(k.append(nil))
	}
	u.mu.Unlock()
	rest, ok := UIDLine(text, uid)
	if !ok {
		return "", "", false
	}
	role, name = LineLabel(rest)
	return role, name, true
}

// UIDLine finds the line of uid in a snapshot's text and returns what
// follows the uid on it; ok false when no line is uid's. Only a line's
// own uid counts, after its indentation: a page cannot pass its text for
// another node's line, since a name is quoted and its newlines escaped.
func UIDLine(text, uid string) (rest string, ok bool) {
	if _, valid := parseUID(uid); !valid {
		return "", false
	}
	needle := "uid=" + uid
	for from := 0; ; {
		i := strings.Index(text[from:], needle)
		if i < 0 {
			return "", false
		}
		i += from
		end := i + len(needle)
		from = end
		lineStart := strings.LastIndexByte(text[:i], '\n') + 1
		if strings.TrimLeft(text[lineStart:i], " ") != "" || end < len(text) && text[end] != ' ' && text[end] != '\n' {
			continue // a name that says it, or another uid that starts so
		}
		rest, _, _ = strings.Cut(text[end:], "\n")
		return rest, true
	}
}

// LineLabel reads the role and name of a snapshot line after its uid:
// ` button "Place order" focusable` gives "button", "Place order". Text
// has no role of its own: ` "Hello"` gives "StaticText", "Hello".
func LineLabel(rest string) (role, name string) {
	rest = strings.TrimPrefix(rest, " ")
	role = "StaticText"
	if !strings.HasPrefix(rest, `"`) {
		role, rest, _ = strings.Cut(rest, " ")
	}
	if !strings.HasPrefix(rest, `"`) {
		return role, ""
	}
	for i := 1; i < len(rest); i++ {
		switch rest[i] {
		case '\\':
			i++
		case '"':
			if n, err := strconv.Unquote(rest[:i+1]); err == nil {
				return role, n
			}
			return role, rest[1:i]
		}
	}
	return role, ""
}

// NewUIDs returns an empty registry whose first snapshot is number 1.
func NewUIDs() *UIDs {
	return &UIDs{byNode: map[axRef]*uidEntry{}, byUID: map[uidKey]axRef{}}
}

// FromPage reports whether the latest snapshot showed nodes of a tree
// computed in the page, whose DOM nodes are known by refs (PageRef), not
// by backend ids; a tree with Chrome's subtrees in its holes has both.
func (u *UIDs) FromPage() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.fromPage
}

// Reset forgets every uid: call it when the main frame commits a new document
// (not on a same-document navigation). Uids handed out before it become
// stale; snapshot numbers go on counting.
func (u *UIDs) Reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.resetSeq = u.seq
	u.resets++
	u.fromPage = false
	u.lastText = ""
	u.byNode = map[axRef]*uidEntry{}
	u.byUID = map[uidKey]axRef{}
}

// Lookup resolves a uid of the current document to its DOM node. The error
// wraps ErrStaleUID for a uid handed out before the last Reset and
// ErrUnknownUID for any other uid it can't resolve; its message tells the
// agent to take a new snapshot. Lookup doesn't check that the node still
// exists: the browser will tell.
func (u *UIDs) Lookup(uid string) (cdp.BackendNodeID, error) {
	_, id, err := u.LookupFrame(uid)
	return id, err
}

// LookupFrame is Lookup that also returns the frame whose document holds the
// node: the FrameID of that document's root node in the tree given to
// SnapshotFrames (empty when the tree carried none). Nodes of an
// out-of-process iframe must be resolved in that frame's session.
func (u *UIDs) LookupFrame(uid string) (cdp.FrameID, cdp.BackendNodeID, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	k, ok := parseUID(uid)
	if !ok {
		k, ok = u.parseCompactLocked(uid)
	}
	if !ok {
		return "", 0, &uidError{uid, ErrUnknownUID}
	}
	if ref, ok := u.byUID[k]; ok && ref.backend != 0 {
		return ref.frame, ref.backend, nil
	}
	if k.seq <= u.resetSeq && k.n < u.minted[k.seq-1] {
		return "", 0, &uidError{uid, ErrStaleUID}
	}
	return "", 0, &uidError{uid, ErrUnknownUID}
}

// UID returns the uid of the node of backend in frame's document, or ""
// when no snapshot of the current document showed it. It hands out no uid.
func (u *UIDs) UID(frame cdp.FrameID, backend cdp.BackendNodeID) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	e := u.byNode[axRef{frame: frame, backend: backend}]
	if e == nil {
		return ""
	}
	return string(e.uid.append(nil))
}

// Len is the number of nodes the registry remembers a uid of: those of the
// current document that a snapshot showed, up to a bound.
func (u *UIDs) Len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.byNode)
}

// assign hands out the uids of one snapshot, in the order of t.out; it
// returns the snapshot's number and its document's.
func (u *UIDs) assign(t *axTree) (int, int, []uidKey) {
	uids := make([]uidKey, len(t.out))
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seq++
	seq, n := u.seq, 0
	u.fromPage = false
	for i, o := range t.out {
		ref := t.ref(o.node)
		u.fromPage = u.fromPage || ref.backend < 0
		if e := u.byNode[ref]; e != nil {
			e.lastSeen = seq
			uids[i] = e.uid
			continue
		}
		k := uidKey{seq, n}
		n++
		u.byNode[ref] = &uidEntry{uid: k, lastSeen: seq}
		u.byUID[k] = ref
		uids[i] = k
	}
	first := 0
	if last := len(u.minted) - 1; last >= 0 {
		first = u.firsts[last] + u.minted[last]
	}
	u.minted, u.firsts = append(u.minted, n), append(u.firsts, first)
	u.prune()
	return seq, u.resets, uids
}

// prune drops the nodes unseen for longest once the registry outgrows
// maxRememberedNodes, down to three quarters of it so that it doesn't sort
// on every snapshot. Nodes of the latest snapshot always stay.
func (u *UIDs) prune() {
	if len(u.byNode) <= maxRememberedNodes {
		return
	}
	var old []axRef
	for ref, e := range u.byNode {
		if e.lastSeen < u.seq {
			old = append(old, ref)
		}
	}
	slices.SortFunc(old, func(a, b axRef) int {
		return cmp.Compare(u.byNode[a].lastSeen, u.byNode[b].lastSeen)
	})
	for _, ref := range old {
		if len(u.byNode) <= maxRememberedNodes*3/4 {
			break
		}
		delete(u.byUID, u.byNode[ref].uid)
		delete(u.byNode, ref)
	}
}
