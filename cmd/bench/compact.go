package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Compact snapshots (--snapshot-format compact): the variant's answers are
// counted as the others' are (o200k tokens, against the default's, which
// is "pagemux --max-output=0"), and checked on each page: its server's
// default snapshot and compact one of the page, taken one after the other,
// must show the same nodes (text joined aside) with the same roles and
// names, and every compact uid of a node that is not text must name in the
// page the element its default uid names (one evaluate_script resolves
// both of each).

// compactFlags is the variant of compact snapshots.
const compactFlags = "--max-output=0 --snapshot-format=compact"

// defaultFlags is the variant whose answers compact ones are compared with.
const defaultFlags = "--max-output=0"

// compactCheck is what the check of one page found.
type compactCheck struct {
	Lines        int    `json:"default_lines"`
	CompactLines int    `json:"compact_lines"`
	Pairs        int    `json:"uids_resolved"` // compact uids of nodes that are not text, each resolved with its default one
	Same         int    `json:"uids_same_element"`
	Failure      string `json:"failure,omitempty"`
}

// benchLine is a node line of either format: depth, uid, what follows.
type benchLine struct {
	depth     int
	uid, rest string
}

var (
	defaultNode = regexp.MustCompile(`^( *)uid=(\S+)(.*)$`)
	compactNode = regexp.MustCompile(`^( *)(e\d+)(.*)$`)
)

// benchLines reads the node lines of a snapshot answer.
func benchLines(answer string, compact bool) ([]benchLine, error) {
	_, body, ok := strings.Cut(answer, "## Latest page snapshot\n")
	if !ok {
		return nil, fmt.Errorf("no snapshot in the answer")
	}
	re, per := defaultNode, 2
	if compact {
		re, per = compactNode, 1
	}
	var lines []benchLine
	for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			return nil, fmt.Errorf("not a node line: %.80q", l)
		}
		lines = append(lines, benchLine{len(m[1]) / per, m[2], m[3]})
	}
	return lines, nil
}

// isText says whether the line is a text node's: one quoted string.
func (l benchLine) isText() bool {
	_, err := strconv.Unquote(strings.TrimPrefix(l.rest, " "))
	return strings.HasPrefix(l.rest, ` "`) && err == nil
}

// label is the role and quoted name of a line, as far as they go.
func (l benchLine) label() string {
	f := strings.Fields(l.rest)
	if len(f) == 0 {
		return ""
	}
	if i := strings.Index(l.rest, `"`); i >= 0 && !strings.HasPrefix(f[0], `"`) {
		end := i + 1
		for end < len(l.rest) && l.rest[end] != '"' {
			if l.rest[end] == '\\' {
				end++
			}
			end++
		}
		return f[0] + " " + l.rest[i:min(end+1, len(l.rest))]
	}
	return f[0]
}

// checkCompact takes the default and then the compact snapshot of the page
// open on l, the compact variant, and checks them (see above).
func checkCompact(ctx context.Context, cfg *config, l *loaded) *compactCheck {
	c := &compactCheck{}
	args := func(format string) map[string]any {
		return map[string]any{"pageId": l.pageID, "format": format}
	}
	def := l.s.call(ctx, 2*cfg.callTimeout, "take_snapshot", args("default"))
	comp := l.s.call(ctx, 2*cfg.callTimeout, "take_snapshot", args("compact"))
	if def.err != nil || def.isError || comp.err != nil || comp.isError {
		c.Failure = "take_snapshot: " + def.failure() + " / " + comp.failure()
		return c
	}
	dl, err := benchLines(def.text, false)
	if err == nil {
		var cl []benchLine
		cl, err = benchLines(comp.text, true)
		c.CompactLines = len(cl)
		if err == nil {
			err = c.match(ctx, cfg, l, dl, cl)
		}
	}
	c.Lines = len(dl)
	if err != nil {
		c.Failure = err.Error()
	}
	return c
}

// match walks the default lines as compact joins them, checks each
// compact line against its default one, and resolves the pairs of uids.
func (c *compactCheck) match(ctx context.Context, cfg *config, l *loaded, dl, cl []benchLine) error {
	var pairs []string
	j := 0
	frame := -1 // depth of the Iframe a line is in: evaluate_script takes one frame's elements
	for i, d := range dl {
		if i > 0 && d.isText() && dl[i-1].isText() && dl[i-1].depth == d.depth {
			continue
		}
		if j >= len(cl) {
			return fmt.Errorf("compact text ends before default line %d (%s)", i, d.uid)
		}
		k := cl[j]
		j++
		if k.depth != d.depth || !d.isText() && k.label() != d.label() {
			return fmt.Errorf("compact line %d %s%s is not default line %d %s%s", j, k.uid, k.rest, i, d.uid, d.rest)
		}
		if frame >= 0 && d.depth <= frame {
			frame = -1
		}
		if frame < 0 && strings.HasPrefix(d.rest, " Iframe") {
			frame = d.depth
		}
		if !d.isText() && frame < 0 {
			pairs = append(pairs, k.uid, d.uid)
		}
	}
	if j != len(cl) {
		return fmt.Errorf("%d compact lines, %d matched", len(cl), j)
	}
	c.Pairs = len(pairs) / 2
	const fn = `(...els) => { let same = 0; for (let i = 0; i < els.length; i += 2) if (els[i] && els[i] === els[i+1]) same++; return same }`
	rep := l.s.call(ctx, 4*cfg.callTimeout, "evaluate_script", map[string]any{"pageId": l.pageID, "function": fn, "args": pairs})
	if rep.err != nil || rep.isError {
		return fmt.Errorf("evaluate_script of the uids: %.300s", rep.failure())
	}
	_, body, _ := strings.Cut(rep.text, "```json\n")
	body, _, _ = strings.Cut(body, "\n```")
	c.Same, _ = strconv.Atoi(strings.TrimSpace(body))
	return nil
}

// printCompact prints each page's compact answer against the default
// one, in o200k tokens, and what its check found.
func printCompact(w io.Writer, corpus string, rs []*realResult) {
	def, comp := variantName(defaultFlags), variantName(compactFlags)
	fmt.Fprintf(w, "\n== %s: compact snapshots (%s) against the default (%s): o200k tokens ==\n", corpus, compactFlags, defaultFlags)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "page\tdefault\tcompact\tratio\tlines default / compact\tnode uids naming the same element")
	var sumDef, sumComp, pages int
	var ratios float64
	for _, r := range rs {
		d, c := r.AnswerTokens[def], r.AnswerTokens[comp]
		row := r.Page + "\t"
		if d > 0 && c > 0 {
			row += fmt.Sprintf("%d\t%d\t%.2f×", d, c, float64(c)/float64(d))
			sumDef, sumComp, pages, ratios = sumDef+d, sumComp+c, pages+1, ratios+float64(c)/float64(d)
		} else {
			row += "n/a\tn/a\tn/a"
		}
		switch k := r.Compact; {
		case k == nil:
			row += "\tn/a\tn/a"
		case k.Failure != "":
			row += fmt.Sprintf("\t%d / %d\tFAILED: %.120s", k.Lines, k.CompactLines, k.Failure)
		default:
			row += fmt.Sprintf("\t%d / %d\t%d of %d", k.Lines, k.CompactLines, k.Same, k.Pairs)
		}
		fmt.Fprintln(tw, row)
	}
	if pages > 0 {
		fmt.Fprintf(tw, "all %d pages\t%d\t%d\t%.2f× (mean of pages %.2f×)\t\t\n", pages, sumDef, sumComp, float64(sumComp)/float64(sumDef), ratios/float64(pages))
	}
	tw.Flush()
}
