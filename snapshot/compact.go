package snapshot

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file writes compact snapshots (--snapshot-format compact): the
// default text, which stays chrome-devtools-mcp's, rewritten line by line
// into fewer tokens. It is a rewriting of the text, made last, so that
// everything that reads snapshot text (Diff, Outline, Run, UIDLine, the
// agents' last snapshots) reads the default text alone; an incremental
// answer's changes and an outline are compacted as they are written.
//
// What it changes, and what stays:
//   - A uid is spelled "e<N>", N its ordinal among all the uids the page's
//     registry handed out: "e42" where the default says "uid=1_42". Every
//     tool that takes a uid takes either spelling (UIDs.LookupFrame,
//     Canonical); a compact uid of a document the page left is stale, as
//     the default one is, since ordinals only grow.
//   - One space of indent a level, not two.
//   - A run of text lines that are siblings (a paragraph's text around its
//     inline markup, a code block's highlighted tokens) is one line, under
//     the first one's uid: the others still resolve, but are not shown.
//     Text a node's name already spells was left out of the default text
//     already (text.go).
//   - Attributes that repeat go: a description that is the name, a
//     capability word before its state ("expandable expanded" is
//     "expanded"); numbers are unquoted (level=2).
//   - URLs are written relative to the document they are in (its
//     RootWebArea's url, else the page's), as the shortest reference that
//     resolves back to the same URL; a RootWebArea's own stays whole.
//
// Every node line stays, with its role, name and states; only text lines
// merge.

// The snapshot formats, of --snapshot-format and the format argument.
const (
	// FormatDefault is chrome-devtools-mcp's text.
	FormatDefault = "default"
	// FormatCompact is the default text rewritten by UIDs.Compact.
	FormatCompact = "compact"
)

// compactPrefix begins a compact uid: "e42".
const compactPrefix = "e"

// isCompactUID reports whether s is spelled as a compact uid: "e" and
// decimal digits.
func isCompactUID(s string) bool {
	_, ok := parseUIDDigits(strings.TrimPrefix(s, compactPrefix))
	return strings.HasPrefix(s, compactPrefix) && ok
}

// parseCompactLocked reads a compact uid back into its snapshot and
// number; ok false when s is not one, or names no uid the registry handed
// out. u.mu is held.
func (u *UIDs) parseCompactLocked(s string) (uidKey, bool) {
	if !isCompactUID(s) {
		return uidKey{}, false
	}
	ord, _ := parseUIDDigits(s[len(compactPrefix):])
	// The last snapshot whose first ordinal is at most ord: of several
	// that start there, those before it handed out nothing.
	i, _ := slices.BinarySearch(u.firsts, ord+1)
	i--
	if i < 0 || ord-u.firsts[i] >= u.minted[i] {
		return uidKey{}, false
	}
	return uidKey{seq: i + 1, n: ord - u.firsts[i]}, true
}

// Canonical is uid in the default spelling ("1_42"): a compact uid
// ("e42") the registry handed out is spelled out, anything else comes back
// as it is. Text that the default format wrote (Tree.Run, UIDLine) is
// searched by it.
func (u *UIDs) Canonical(uid string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if k, ok := u.parseCompactLocked(uid); ok {
		return string(k.append(nil))
	}
	return uid
}

// compactSpeller spells the uids of one compacting: the registry's
// ordinals as they were when it began.
type compactSpeller struct {
	firsts, minted []int
}

func (u *UIDs) speller() compactSpeller {
	u.mu.Lock()
	defer u.mu.Unlock()
	// Both only grow by appends, so the shared prefix never changes.
	return compactSpeller{firsts: u.firsts[:len(u.firsts):len(u.firsts)], minted: u.minted[:len(u.minted):len(u.minted)]}
}

// spell is the compact spelling of a default uid; ok false for a string
// that is not one this registry handed out, which stays as it is.
func (sp compactSpeller) spell(uid string) (string, bool) {
	k, ok := parseUID(uid)
	if !ok || k.seq > len(sp.firsts) || k.n >= sp.minted[k.seq-1] {
		return uid, false
	}
	return compactPrefix + strconv.Itoa(sp.firsts[k.seq-1]+k.n), true
}

// Compact rewrites text, a snapshot section in the default format (a
// snapshot, a part of one, an outline of one, with the heading and notes
// before it), in the compact format; with marked, text is an incremental
// answer's changes (Changes.Text, or OutlineChanges of it: each line after
// its mark), and lines merge only with lines of the same mark. pageURL is
// the base of URLs outside any RootWebArea shown (a part of the page). The
// uids must be this registry's: Compact hands out none.
func (u *UIDs) Compact(text string, marked bool, pageURL string) string {
	c := compacter{sp: u.speller(), marked: marked}
	if base, err := url.Parse(pageURL); err == nil && base.IsAbs() {
		c.page = base
	}
	c.out = make([]byte, 0, len(text)*2/3)
	for line := range strings.Lines(text) {
		c.line(strings.TrimSuffix(line, "\n"))
	}
	c.flush(0)
	if !strings.HasSuffix(text, "\n") {
		c.out = c.out[:max(len(c.out)-1, 0)]
	}
	return string(c.out)
}

// compacter is the state of one Compact: the text run being merged and
// the documents (RootWebArea lines) the current line is in.
type compacter struct {
	sp     compactSpeller
	marked bool
	page   *url.URL
	bases  []docBase
	out    []byte
	// run is the text line being merged: its mark and indent, and the
	// text lines it joins (none: no run).
	run struct {
		lead   string
		depth  int
		pieces []textPiece
	}
}

// textPiece is one text line of a run: its uid as spelled, its text.
type textPiece struct {
	uid  string
	text []byte
}

// docBase is the URL of the document a RootWebArea line at depth opens.
type docBase struct {
	depth int
	url   *url.URL // nil: none that resolves
}

// line rewrites one line of the text.
func (c *compacter) line(line string) {
	mark := ""
	if c.marked && len(line) >= 2 && line[1] == ' ' && strings.IndexByte(marks, line[0]) >= 0 {
		mark, line = line[:2], line[2:]
	}
	body := strings.TrimLeft(line, " ")
	depth := (len(line) - len(body)) / 2
	lead := mark + strings.Repeat(" ", depth)
	if !strings.HasPrefix(body, "uid=") {
		c.flush(depth)
		c.out = append(c.out, lead...)
		c.out = append(respellRefs(c.out, body, c.sp), '\n')
		return
	}
	uid, tail, _ := strings.Cut(body[len("uid="):], " ")
	spelled, ok := c.sp.spell(uid)
	if !ok {
		spelled = "uid=" + uid
	}
	for len(c.bases) > 0 && c.bases[len(c.bases)-1].depth >= depth {
		c.bases = c.bases[:len(c.bases)-1]
	}
	if s, ok := onlyQuoted(tail); ok {
		c.text(lead, depth, spelled, s)
		return
	}
	c.flush(depth)
	c.out = append(c.out, lead...)
	c.out = append(c.out, spelled...)
	c.out = c.tail(tail, depth)
	c.out = append(c.out, '\n')
}

// text adds a text line (a node with a quoted name alone) at depth to the
// run, or starts a run with it.
func (c *compacter) text(lead string, depth int, uid string, s []byte) {
	r := &c.run
	if len(r.pieces) == 0 || r.lead != lead {
		c.flush(depth)
		r.lead, r.depth = lead, depth
	}
	r.pieces = append(r.pieces, textPiece{uid, s})
}

// flush writes the text run, if there is one, before a line at depth. A
// line below the run's is a child of its last text (a verbose snapshot's
// InlineTextBox), which then keeps a line of its own, with its uid.
func (c *compacter) flush(depth int) {
	r := &c.run
	ps := r.pieces
	if len(ps) == 0 {
		return
	}
	r.pieces = r.pieces[:0]
	if depth > r.depth && len(ps) > 1 {
		c.writeText(joinPieces(ps[:len(ps)-1]))
		ps = ps[len(ps)-1:]
	}
	c.writeText(joinPieces(ps))
}

// joinPieces is one text piece of a run of them, under the first's uid.
func joinPieces(ps []textPiece) textPiece {
	if len(ps) == 1 {
		return ps[0]
	}
	joined := textPiece{uid: ps[0].uid}
	for _, p := range ps {
		joined.text = joinText(joined.text, p.text)
	}
	return joined
}

// writeText writes a text line of the run.
func (c *compacter) writeText(p textPiece) {
	c.out = append(c.out, c.run.lead...)
	c.out = append(c.out, p.uid...)
	c.out = append(c.out, ' ')
	c.out = appendAXQuoted(c.out, p.text)
	c.out = append(c.out, '\n')
}

// joinText joins two texts that were sibling nodes. Their boundary is lost
// in the default text too, which shows no inline or block markup: within
// a paragraph or a code block one of them mostly has the space or the
// punctuation of the boundary; two words meeting get a space, as do a
// sentence's end and the capital of the next, as two paragraphs' texts
// would read.
func joinText(a, b []byte) []byte {
	if len(a) > 0 && len(b) > 0 {
		ra, _ := utf8.DecodeLastRune(a)
		rb, _ := utf8.DecodeRune(b)
		if isWordRune(ra) && isWordRune(rb) || strings.ContainsRune(".!?", ra) && unicode.IsUpper(rb) {
			a = append(a, ' ')
		}
	}
	return append(a, b...)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// onlyQuoted reads tail, what follows a uid, when it is one quoted string
// and nothing else (a text node's line): the string, unescaped.
func onlyQuoted(tail string) ([]byte, bool) {
	if len(tail) < 2 || tail[0] != '"' || quotedEnd(tail, 0) != len(tail) {
		return nil, false
	}
	s, err := strconv.Unquote(tail)
	return []byte(s), err == nil
}

// quotedEnd is the index after the quoted string that starts at s[i], or
// len(s)+1 when it does not end.
func quotedEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(s) + 1
}

// capabilities are the bare words the default text prints before a state
// whenever the state is known (text.go): before the state's own word they
// say nothing more.
var capabilities = map[string]string{
	"disableable": "disabled", "expandable": "expanded", "focusable": "focused", "selectable": "selected",
}

// numericAttrs are the attributes whose number is written unquoted.
var numericAttrs = map[string]bool{"level": true, "valuemin": true, "valuemax": true}

// tail appends the rest of a node's line after its uid, compacted: role,
// name, and the attributes that still say something.
func (c *compacter) tail(tail string, depth int) []byte {
	toks := lineTokens(tail)
	role, name := "", ""
	i := 0
	if i < len(toks) && toks[i][0] != '"' && !strings.Contains(toks[i], "=") {
		role, i = toks[i], i+1
	}
	if i < len(toks) && toks[i][0] == '"' {
		name = toks[i]
	}
	b := c.out
	for j, t := range toks {
		key, val, isAttr := strings.Cut(t, "=")
		switch {
		case j < i || t == name && j == i:
		case !isAttr && j+1 < len(toks) && capabilities[t] == toks[j+1]:
			continue
		case isAttr && key == "description" && val == name:
			continue
		case isAttr && numericAttrs[key] && isNumber(val):
			t = key + "=" + val[1:len(val)-1]
		case isAttr && key == "url":
			t = key + "=" + c.url(role, val, depth)
		}
		b = append(b, ' ')
		b = append(b, t...)
	}
	return b
}

// url is a url attribute's value (quoted), relative to its document;
// a RootWebArea's own is whole, and is the base of the lines below it.
func (c *compacter) url(role, quoted string, depth int) string {
	s, err := strconv.Unquote(quoted)
	if err != nil {
		return quoted
	}
	if role == "RootWebArea" {
		base, err := url.Parse(s)
		if err != nil || !base.IsAbs() {
			base = nil
		}
		c.bases = append(c.bases, docBase{depth, base})
		return quoted
	}
	base := c.page
	if n := len(c.bases); n > 0 {
		base = c.bases[n-1].url
	}
	rel := relativeURL(base, s)
	if rel == s {
		return quoted
	}
	return string(appendAXQuoted(nil, []byte(rel)))
}

// isNumber reports whether quoted is a quoted integer.
func isNumber(quoted string) bool {
	s, ok := strings.CutPrefix(quoted, `"`)
	s, ok2 := strings.CutSuffix(s, `"`)
	_, ok3 := parseUIDDigits(strings.TrimPrefix(s, "-"))
	return ok && ok2 && ok3
}

// lineTokens splits the rest of a line on the spaces outside its quoted
// strings: `link "A b" url="c"` is link, "A b", url="c".
func lineTokens(s string) []string {
	var toks []string
	for start, i := 0, 0; i <= len(s); {
		switch {
		case i == len(s) || s[i] == ' ':
			if i > start {
				toks = append(toks, s[start:i])
			}
			i++
			start = i
		case s[i] == '"':
			i = min(quotedEnd(s, i), len(s))
		default:
			i++
		}
	}
	return toks
}

// respellRefs appends body, a line that is not a node (a fold, a note),
// with the uids it names outside its quoted strings ("uid=1_4",
// "to=1_9") spelled compact.
func respellRefs(b []byte, body string, sp compactSpeller) []byte {
	for i := 0; i < len(body); {
		switch {
		case body[i] == '"':
			end := min(quotedEnd(body, i), len(body))
			b, i = append(b, body[i:end]...), end
		case refAt(body, i, "uid=") || refAt(body, i, "to="):
			eq := i + strings.IndexByte(body[i:], '=') + 1
			end := eq
			for end < len(body) && (body[end] >= '0' && body[end] <= '9' || body[end] == '_') {
				end++
			}
			spelled, _ := sp.spell(body[eq:end])
			b = append(b, body[i:eq]...)
			b, i = append(b, spelled...), end
		default:
			b, i = append(b, body[i]), i+1
		}
	}
	return b
}

// refAt reports whether key ("uid=") starts a word at body[i].
func refAt(body string, i int, key string) bool {
	return strings.HasPrefix(body[i:], key) && (i == 0 || body[i-1] == ' ' || body[i-1] == '(')
}

// relativeURL is the shortest reference that resolves against base back
// to s: a fragment, a query, a path below base's directory, a path from
// the root, or one without the scheme; s itself when none does (another
// scheme, no base, or s not as URL parsing writes it back).
func relativeURL(base *url.URL, s string) string {
	u, err := url.Parse(s)
	if base == nil || err != nil || u.String() != s || u.Scheme != base.Scheme || u.Opaque != "" || u.User != nil || !u.IsAbs() {
		return s
	}
	suffix := ""
	if u.RawQuery != "" || u.ForceQuery {
		suffix = "?" + u.RawQuery
	}
	if u.Fragment != "" {
		suffix += "#" + u.EscapedFragment()
	}
	path := u.EscapedPath()
	var cands []string
	if u.Host == base.Host {
		if u.Fragment != "" {
			cands = append(cands, "#"+u.EscapedFragment())
		}
		if u.RawQuery != "" {
			cands = append(cands, suffix)
		}
		dir := base.EscapedPath()
		dir = dir[:strings.LastIndexByte(dir, '/')+1]
		if rest, ok := strings.CutPrefix(path, dir); ok && rest != "" && dir != "" {
			cands = append(cands, rest+suffix)
		}
		if strings.HasPrefix(path, "/") {
			cands = append(cands, path+suffix)
		}
	}
	cands = append(cands, "//"+u.Host+path+suffix)
	best := s
	for _, cand := range cands {
		if len(cand) >= len(best) {
			continue
		}
		if r, err := url.Parse(cand); err == nil && base.ResolveReference(r).String() == s {
			best = cand
		}
	}
	return best
}
