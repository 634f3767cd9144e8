package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Fidelity: how close each server's snapshot text is to chrome-devtools-mcp's
// (Chrome's own tree, as the drop-in promise names it), node for node, uids
// aside and quoting undone. Playwright MCP answers in a format of its own
// (YAML, refs instead of uids), which is not compared.

// referencePeer is the name of the peer whose text is the ground truth.
const referencePeer = "chrome-devtools-mcp 1.11.0"

// ownFormat says whether a server's text is not in chrome-devtools-mcp's
// format, so that comparing it would say nothing: Playwright MCP's, and
// pagemux's compact snapshots (compact.go checks those against pagemux's
// default ones).
func ownFormat(server string) bool {
	return strings.HasPrefix(server, "@playwright/mcp") || server == variantName(compactFlags)
}

// escapesQuoted says whether a server escapes the strings it quotes as JSON
// does: pagemux does (snapshot.appendAXQuoted), chrome-devtools-mcp prints
// names and values raw, so a newline in a value breaks its line.
func escapesQuoted(server string) bool { return strings.HasPrefix(server, "pagemux") }

// nodeLine is a line that starts a node: indentation, then its uid.
var nodeLine = regexp.MustCompile(`^( *)uid=\S+ ?`)

// snapshotNodes returns the nodes of a snapshot answer, one string each, in
// the form they are compared in: indentation kept, the uid left out, quoted
// strings raw (unescaped when escaped says the server escapes them). Lines
// before the first node (the answer's headings) are not nodes; a line that
// does not start a node continues the node before it (a raw newline in
// chrome-devtools-mcp's text), and is joined to it with "\n". Trailing blank
// lines are dropped.
func snapshotNodes(text string, escaped bool) []string {
	var nodes []string
	for _, line := range strings.Split(text, "\n") {
		m := nodeLine.FindStringSubmatchIndex(line)
		switch {
		case m != nil:
			node := line[m[2]:m[3]] + line[m[1]:]
			if escaped {
				node = unescapeQuoted(node)
			}
			nodes = append(nodes, node)
		case len(nodes) > 0:
			nodes[len(nodes)-1] += "\n" + line
		}
	}
	if n := len(nodes); n > 0 {
		nodes[n-1] = strings.TrimRight(nodes[n-1], "\n")
	}
	return nodes
}

// unescapeQuoted turns each JSON string literal of a node line into its text
// between plain double quotes, as chrome-devtools-mcp prints it. A literal
// that does not decode is left as it is.
func unescapeQuoted(line string) string {
	if !strings.Contains(line, `\`) {
		return line
	}
	var b strings.Builder
	for {
		start := strings.IndexByte(line, '"')
		if start < 0 {
			b.WriteString(line)
			return b.String()
		}
		end := start + 1
		for end < len(line) && line[end] != '"' {
			if line[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(line) {
			b.WriteString(line)
			return b.String()
		}
		var s string
		if err := json.Unmarshal([]byte(line[start:end+1]), &s); err != nil {
			s = line[start+1 : end]
		}
		b.WriteString(line[:start+1])
		b.WriteString(s)
		b.WriteByte('"')
		line = line[end+1:]
	}
}

// nodeDiff is how one server's nodes differ from the reference's.
type nodeDiff struct {
	Nodes    int `json:"nodes"`           // the server's
	RefNodes int `json:"reference_nodes"` // the reference's
	// Differ counts the nodes outside a longest common subsequence of the
	// two: a node changed counts once, as does one missing or one extra
	// (the larger of the two sides' unmatched nodes). With Approximate,
	// the sequences differed too much for the diff's budget and Differ
	// counts unmatched nodes as multisets instead (order ignored).
	Differ      int  `json:"nodes_differing"`
	Approximate bool `json:"approximate,omitempty"`
	// First holds the first differing lines: "- " the reference's, "+ "
	// the server's, after "@ node N", the index of the first difference.
	First []string `json:"first_differences,omitempty"`
}

// maxEdits bounds the diff's work: O((n+m)·maxEdits).
const maxEdits = 3000

// firstLines is how many lines of each side diffNodes keeps in First.
const firstLines = 3

// diffNodes compares got with ref, node for node.
func diffNodes(ref, got []string) nodeDiff {
	d := nodeDiff{Nodes: len(got), RefNodes: len(ref)}
	pre := 0
	for pre < len(ref) && pre < len(got) && ref[pre] == got[pre] {
		pre++
	}
	if pre == len(ref) && pre == len(got) {
		return d
	}
	d.First = append(d.First, fmt.Sprintf("@ node %d", pre))
	for _, l := range ref[pre:min(len(ref), pre+firstLines)] {
		d.First = append(d.First, "- "+l)
	}
	for _, l := range got[pre:min(len(got), pre+firstLines)] {
		d.First = append(d.First, "+ "+l)
	}
	a, b := ref[pre:], got[pre:]
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	edits, ok := editDistance(a, b, maxEdits)
	if !ok {
		d.Approximate = true
		d.Differ = multisetDiffer(a, b)
		return d
	}
	// edits = (n-l) + (m-l) with l the common subsequence's length.
	n, m := len(a), len(b)
	d.Differ = max((edits+n-m)/2, (edits-n+m)/2)
	return d
}

// editDistance is the fewest deletions and insertions that turn a into b
// (Myers' greedy algorithm), or false when it is above limit.
func editDistance(a, b []string, limit int) (int, bool) {
	// Nodes as numbers: comparing ints in the inner loop, not strings.
	ids := map[string]int{}
	num := func(s []string) []int {
		out := make([]int, len(s))
		for i, v := range s {
			id, ok := ids[v]
			if !ok {
				id = len(ids)
				ids[v] = id
			}
			out[i] = id
		}
		return out
	}
	x0, y0 := num(a), num(b)
	n, m := len(x0), len(y0)
	off := limit + 1
	v := make([]int, 2*limit+3)
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && x0[x] == y0[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return d, true
			}
		}
	}
	return 0, false
}

// multisetDiffer counts the nodes of the larger side that the other side
// does not have, order aside.
func multisetDiffer(a, b []string) int {
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	onlyB := 0
	for _, s := range b {
		if count[s] > 0 {
			count[s]--
		} else {
			onlyB++
		}
	}
	onlyA := 0
	for _, c := range count {
		onlyA += c
	}
	return max(onlyA, onlyB)
}

// dumpTexts writes each server's answer on a page, and its nodes as
// compared, to dir/SERVER/CORPUS/PAGE.txt and .nodes (a page ending in "/"
// is its index.html), for diff -r.
func dumpTexts(dir, corpus, page string, texts map[string]string) error {
	if strings.HasSuffix(page, "/") || page == "" {
		page += "index.html"
	}
	for server, text := range texts {
		base := filepath.Join(dir, serverDir(server), corpus, filepath.FromSlash(page))
		if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(base+".txt", []byte(text), 0o644); err != nil {
			return err
		}
		if ownFormat(server) {
			continue
		}
		nodes := snapshotNodes(text, escapesQuoted(server))
		if err := os.WriteFile(base+".nodes", []byte(strings.Join(nodes, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// serverDir names a server's folder of dumped texts: "pagemux --max-output=0"
// is pagemux_max-output=0, "@playwright/mcp 0.0.83" playwright_mcp_0.0.83.
func serverDir(server string) string {
	s := strings.NewReplacer("--", "", "@", "", "/", "_", " ", "_").Replace(server)
	return strings.Trim(s, "_")
}

// printFidelity prints a corpus's table of the whole answers, one server a
// row: pages identical to chrome-devtools-mcp's, nodes that differ, time and
// tokens; then, server by server, the pages that differ and where.
func printFidelity(w io.Writer, cfg *config, c *corpus) {
	fmt.Fprintf(w, "\n== take_snapshot, whole answers, %s (%d pages; time: median of %d a page, geomean over pages; fidelity: against %s, node for node, uids aside, quoting undone) ==\n",
		corpusTitle(cfg, c), len(c.rs), c.reps, referencePeer)
	var names []string
	for _, v := range variants {
		names = append(names, variantName(v))
	}
	for _, p := range peers(cfg.peerDir) {
		names = append(names, p.name)
	}
	const playwright = "@playwright/mcp 0.0.83"
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "server\tpages identical\tnodes that differ\ttime\t÷ Node\t÷ Playwright\tchars / o200k tokens (sum)")
	for _, n := range names {
		row := n + "\t" + fidelityCells(c.rs, n)
		row += "\t" + fmtGeomean(c.rs, n, "")
		row += "\t" + fmtGeomean(c.rs, n, referencePeer) + "\t" + fmtGeomean(c.rs, n, playwright)
		chars, tokens, pages := 0, 0, 0
		for _, r := range c.rs {
			if ch, ok := r.AnswerChars[n]; ok {
				chars, tokens, pages = chars+ch, tokens+r.AnswerTokens[n], pages+1
			}
		}
		if pages < len(c.rs) {
			row += fmt.Sprintf("\t%d / %d (%d pages)", chars, tokens, pages)
		} else {
			row += fmt.Sprintf("\t%d / %d", chars, tokens)
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
	for _, n := range names {
		if n == referencePeer || ownFormat(n) {
			continue
		}
		printDiffering(w, c, n)
	}
}

// corpusTitle names a corpus in its table's heading.
func corpusTitle(cfg *config, c *corpus) string {
	if c.name == "apg" {
		return "the W3C APG examples (" + cfg.apgDir + ")"
	}
	return "the real pages (" + cfg.realDir + ")"
}

// fidelityCells are a server's "pages identical" and "nodes that differ"
// cells: "n/a (own format)" for Playwright MCP, "reference" for
// chrome-devtools-mcp. A page chrome-devtools-mcp has no answer for is not
// counted; one the server has none for counts as differing, not its nodes.
func fidelityCells(rs []*realResult, server string) string {
	switch {
	case server == referencePeer:
		return "reference\treference"
	case ownFormat(server):
		return "n/a (own format)\tn/a (own format)"
	}
	compared, same, differ, nodes, approx := 0, 0, 0, 0, false
	for _, r := range rs {
		if r.Fidelity == nil {
			continue
		}
		compared++
		d := r.Fidelity[server]
		if d == nil {
			continue
		}
		if d.Differ == 0 {
			same++
		}
		differ, nodes, approx = differ+d.Differ, nodes+d.RefNodes, approx || d.Approximate
	}
	if compared == 0 {
		return "n/a (no reference)\tn/a"
	}
	about := ""
	if approx {
		about = "about "
	}
	return fmt.Sprintf("%d of %d\t%s%d of %d", same, compared, about, differ, nodes)
}

// fmtGeomean is the geometric mean over the pages of server's median time,
// or, with over, of its ratio to over's; "n/a" without any.
func fmtGeomean(rs []*realResult, server, over string) string {
	sum, n := 0.0, 0
	for _, r := range rs {
		t := r.TimesMS[server]
		d := 1.0
		if over != "" {
			d = r.TimesMS[over]
		}
		if t > 0 && d > 0 {
			sum += math.Log(t / d)
			n++
		}
	}
	switch {
	case n == 0 || (over == server):
		return "n/a"
	case over != "":
		return fmt.Sprintf("%.2f×", math.Exp(sum/float64(n)))
	}
	return fmtMS(math.Exp(sum / float64(n)))
}

// printDiffering lists the pages whose answer from server differs from
// chrome-devtools-mcp's, with the first differing nodes.
func printDiffering(w io.Writer, c *corpus, server string) {
	var lines []string
	for _, r := range c.rs {
		if r.Fidelity == nil {
			continue
		}
		d := r.Fidelity[server]
		switch {
		case d == nil:
			lines = append(lines, "  "+r.Page+": no answer")
		case d.Differ > 0:
			about := ""
			if d.Approximate {
				about = "about "
			}
			lines = append(lines, fmt.Sprintf("  %s: %s%d of %d nodes differ (%d nodes here)", r.Page, about, d.Differ, d.RefNodes, d.Nodes))
			for _, l := range d.First {
				lines = append(lines, "    "+clip(l, 200))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n-- %s: pages whose text differs from %s's (its first differing nodes: - %s's, + this server's) --\n", server, referencePeer, referencePeer)
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}

// clip shortens s to about n characters, on one line.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
