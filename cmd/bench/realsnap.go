package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// realPages are the pages of testdata/real the snapshot benchmark loads,
// smallest snapshot first. rust/ is rust/index.html (http.FileServer
// redirects the latter, and new_page would list the page by the former).
var realPages = []string{
	"rust/", "go_mem.html", "asm.html", "go1.html",
	"rust/book/ch04-01-what-is-ownership.html", "rust/std/collections/struct.HashMap.html",
	"go_spec.html", "rust/std/vec/struct.Vec.html", "rust/releases.html", "rust/book/print.html",
}

// toggleJS adds a toggle button after the page's first visible heading (rustdoc
// and mdBook hide some), as
// tools/snapshot_test.go's TestIncrementalSizes does: a click on it changes
// one element.
const toggleJS = `() => { const b = document.createElement('button'); b.textContent = 'Toggle';
	b.setAttribute('aria-pressed', 'false'); b.onclick = () => b.setAttribute('aria-pressed', 'true');
	const h = [...document.querySelectorAll('h1, h2')].find((e) => e.checkVisibility()); if (h) h.after(b); else document.body.prepend(b); return 1 }`

// realResult is one page's snapshot sizes and times.
type realResult struct {
	Page string `json:"page"`
	// Full, Default and Incremental are measured on testdata/real only.
	Full        int                `json:"full_chars,omitempty"`        // filePath: the whole tree
	Default     int                `json:"default_chars,omitempty"`     // the answer, outlined over --max-output
	Incremental int                `json:"incremental_chars,omitempty"` // click with includeSnapshot, incremental mode
	Tokens      map[string][]int   `json:"tokens_o200k,omitempty"`
	TimesMS     map[string]float64 `json:"take_snapshot_median_ms"` // server -> median
	// AnswerChars and AnswerTokens are each whole answer's size
	// (characters, o200k tokens): the pagemux variants' and the peers'
	// snapshot calls, counted alike.
	AnswerChars  map[string]int `json:"answer_chars,omitempty"`
	AnswerTokens map[string]int `json:"answer_tokens_o200k,omitempty"`
	// Fidelity is each whole answer against chrome-devtools-mcp's
	// (fidelity.go); a server that gave no answer has none. Empty when
	// chrome-devtools-mcp gave none.
	Fidelity map[string]*nodeDiff `json:"fidelity,omitempty"`
	Failure  string               `json:"failure,omitempty"`
	// Compact is the check of the compact variant's snapshots of the
	// page (compact.go).
	Compact *compactCheck `json:"compact_check,omitempty"`
	// texts are the whole answers by server, kept until the page is
	// compared and dumped.
	texts map[string]string
}

// corpus is a set of pages the snapshot benchmark loads: testdata/real's
// (sizes, times, fidelity) or the APG examples' (times and fidelity).
type corpus struct {
	name  string // in the tables and in -dump's paths
	path  string // the URL path the site serves it under, with a trailing /
	pages []string
	reps  int  // timed calls per page and server
	sizes bool // also pagemux's outlined and incremental sizes (the main server)
	rs    []*realResult
}

// hostRules keeps every compared Chrome on loopback: a host that is not
// 127.0.0.1 or localhost does not resolve (the APG examples embed frames of
// aria-at.w3.org), so each server shows the same error frame.
const hostRules = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"

// peer is an MCP server the snapshot times are compared with.
type peer struct {
	name, navigate, snapshot string
	// args are node's arguments; tmp is a directory of the run's own.
	args func(tmp string) []string
}

func peers(dir string) []peer {
	return []peer{
		{referencePeer, "new_page", "take_snapshot", func(tmp string) []string {
			return []string{filepath.Join(dir, "node_modules/chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js"),
				"--headless", "--isolated", "--executablePath=/usr/bin/chromium", "--chromeArg=--no-sandbox",
				"--chromeArg=" + hostRules, "--no-usage-statistics", "--no-performance-crux"}
		}},
		{"@playwright/mcp 0.0.83", "browser_navigate", "browser_snapshot", func(tmp string) []string {
			// Chrome's flags only come through the config file.
			return []string{filepath.Join(dir, "node_modules/@playwright/mcp/cli.js"), "--headless", "--isolated",
				"--executable-path=/usr/bin/chromium", "--no-sandbox", "--output-dir=" + tmp,
				"--config=" + filepath.Join(tmp, "playwright-mcp.json")}
		}},
	}
}

// writePlaywrightConfig writes the config file peers names for Playwright
// MCP: Chrome's host rules.
func writePlaywrightConfig(tmp string) error {
	b, _ := json.Marshal(map[string]any{"browser": map[string]any{"launchOptions": map[string]any{"args": []string{hostRules}}}})
	return os.WriteFile(filepath.Join(tmp, "playwright-mcp.json"), b, 0o644)
}

// variants are the flags of the pagemux servers timed besides the main one,
// each named "pagemux FLAGS" in the figures: the whole tree as an answer,
// as chrome-devtools-mcp's is, not outlined; and that from Chrome's own
// tree; and compact snapshots (compact.go).
var variants = []string{defaultFlags, "--snapshot-source=chrome --max-output=0", compactFlags}

func variantName(flags string) string { return "pagemux " + flags }

// apgPages lists the APG examples of dir: patterns/*/examples/*.html.
func apgPages(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "patterns", "*", "examples", "*.html"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("-apg-dir %s: no patterns/*/examples/*.html", dir)
	}
	var pages []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		pages = append(pages, filepath.ToSlash(rel))
	}
	slices.Sort(pages)
	return pages, nil
}

// snapshotCorpora lists the corpora cfg asks for: testdata/real's pages
// (-real-dir) and the APG examples (-apg-dir).
func snapshotCorpora(cfg *config, log *slog.Logger) []*corpus {
	var cs []*corpus
	if cfg.realDir != "" {
		pages := realPages
		if len(cfg.realPages) > 0 {
			pages = cfg.realPages
		}
		cs = append(cs, &corpus{name: "real", path: "/real/", pages: pages, reps: cfg.realReps, sizes: true})
	}
	if cfg.apgDir != "" {
		pages, err := apgPages(cfg.apgDir)
		if err != nil {
			log.Error("APG examples", "err", err)
		} else {
			cs = append(cs, &corpus{name: "apg", path: "/apg/", pages: pages, reps: cfg.apgReps})
		}
	}
	return cs
}

// realSnapshots measures the corpora's pages page by page, side by side:
// on pagemux (--snapshot-mode=incremental), its sizes and times (testdata/
// real only); on pagemux with whole answers (--max-output=0), its times;
// on each peer installed in peerDir, its snapshot call's time and answer;
// and each whole answer against chrome-devtools-mcp's (r.snapshots). A run cut short
// still has every server's figures of the pages it got through.
func realSnapshots(ctx context.Context, cfg *config, bin, siteURL string, log *slog.Logger) []*corpus {
	cs := snapshotCorpora(cfg, log)
	var s *server
	if len(cs) > 0 && cs[0].sizes {
		var err error
		s, err = startServer(ctx, bin, []string{"--snapshot-mode=incremental", "--chrome-arg=" + hostRules}, cfg.callTimeout, log)
		if err != nil {
			log.Error("pagemux for the real pages", "err", err)
			return nil
		}
		defer s.close()
	}
	others := map[string]*server{}
	for _, v := range variants {
		w, err := startServer(ctx, bin, append(strings.Fields(v), "--chrome-arg="+hostRules), cfg.callTimeout, log)
		if err != nil {
			log.Error("a pagemux for the real pages", "server", variantName(v), "err", err)
			continue
		}
		defer w.close()
		others[v] = w
	}
	tmp, _ := os.MkdirTemp("", "pagemux-realsnap-")
	defer os.RemoveAll(tmp)
	if err := writePlaywrightConfig(tmp); err != nil {
		log.Error("Playwright MCP's config", "err", err)
	}
	started := map[string]*server{}
	for _, pr := range peers(cfg.peerDir) {
		if _, err := os.Stat(pr.args(tmp)[0]); err != nil {
			log.Warn("peer not installed; ./scripts/bench installs it", "peer", pr.name, "err", err)
			continue
		}
		ps, err := startServer(ctx, "node", pr.args(tmp), cfg.callTimeout, log)
		if err != nil {
			log.Error("peer did not start", "peer", pr.name, "err", err)
			continue
		}
		defer ps.close()
		started[pr.name] = ps
	}
	for _, c := range cs {
		for _, p := range c.pages {
			if ctx.Err() != nil {
				return cs
			}
			r := &realResult{Page: p, TimesMS: map[string]float64{}, texts: map[string]string{}}
			c.rs = append(c.rs, r)
			url := siteURL + c.path + p
			if c.sizes {
				if err := r.pagemux(ctx, cfg, s, url, tmp, log); err != nil {
					r.Failure = err.Error()
					log.Error("real page", "page", p, "err", err)
				}
			}
			r.snapshots(ctx, cfg, c.reps, others, started, url, log)
			r.compare(ctx, cfg, c.name, log)
		}
	}
	return cs
}

// loaded is a page open on one server, ready for its snapshot call.
type loaded struct {
	name, tool string
	s          *server
	args       map[string]any
	pageID     any // the page to close after, if the server lists pages
}

// loadWhole opens url on w, the pagemux of variants named name.
func loadWhole(ctx context.Context, cfg *config, name string, w *server, url string) (*loaded, error) {
	id, _, err := openPage(ctx, w, cfg, url)
	if err != nil {
		return nil, err
	}
	return &loaded{name: name, tool: "take_snapshot", s: w, args: map[string]any{"pageId": id}, pageID: id}, nil
}

// loadPeer opens url on the peer pr, running as ps.
func loadPeer(ctx context.Context, cfg *config, pr peer, ps *server, url string) (*loaded, error) {
	rep := ps.call(ctx, 2*cfg.callTimeout, pr.navigate, map[string]any{"url": url})
	if rep.err != nil || rep.isError {
		return nil, fmt.Errorf("%s: %s", pr.navigate, rep.failure())
	}
	l := &loaded{name: pr.name, tool: pr.snapshot, s: ps, args: map[string]any{}}
	// chrome-devtools-mcp 1.11's take_snapshot requires pageId: the page
	// its new_page answer lists with the URL.
	for _, line := range strings.Split(rep.text, "\n") {
		if m := pageID.FindStringSubmatch(line); m != nil && pr.snapshot == "take_snapshot" && strings.Contains(line, url) {
			id, _ := strconv.Atoi(m[1])
			l.args["pageId"], l.pageID = id, id
		}
	}
	return l, nil
}

// snapshots loads url on every whole-answer server (the pagemux variants,
// the peers), lets the pages settle for cfg.settle, then times each
// server's snapshot call in turn and keeps its last answer. The pages are
// loaded before any is timed so that the wait is paid once a page, not
// once a server.
func (r *realResult) snapshots(ctx context.Context, cfg *config, reps int, others, started map[string]*server, url string, log *slog.Logger) {
	var ls []*loaded
	for _, v := range variants {
		if w := others[v]; w != nil {
			l, err := loadWhole(ctx, cfg, variantName(v), w, url)
			if err != nil {
				log.Error("real page", "server", variantName(v), "page", r.Page, "err", err)
				continue
			}
			ls = append(ls, l)
		}
	}
	for _, pr := range peers(cfg.peerDir) {
		if ps := started[pr.name]; ps != nil {
			l, err := loadPeer(ctx, cfg, pr, ps, url)
			if err != nil {
				log.Error("peer navigation", "peer", pr.name, "page", r.Page, "err", err)
				continue
			}
			ls = append(ls, l)
		}
	}
	// Pages finish after their load event: the APG examples show their
	// "Open In CodePen" buttons on a 500 ms timer, and a snapshot taken
	// before it would differ by when it was taken, not by its source.
	select {
	case <-ctx.Done():
	case <-time.After(cfg.settle):
	}
	for _, l := range ls {
		var answer string
		r.TimesMS[l.name], answer = medianCall(ctx, cfg, reps, l.s, l.tool, l.args)
		if answer != "" {
			r.texts[l.name] = answer
		}
		if l.name == variantName(compactFlags) {
			r.Compact = checkCompact(ctx, cfg, l) // compact.go
		}
	}
	for _, l := range ls {
		// Tabs closed: a corpus of 76 pages does not pile up 76 tabs.
		if l.pageID != nil {
			l.s.call(ctx, cfg.callTimeout, "close_page", map[string]any{"pageId": l.pageID})
		}
	}
}

// compare counts the page's whole answers (characters, o200k tokens),
// compares each with chrome-devtools-mcp's, and writes them to -dump.
func (r *realResult) compare(ctx context.Context, cfg *config, corpusName string, log *slog.Logger) {
	defer func() { r.texts = nil }()
	if len(r.texts) == 0 {
		return
	}
	var names, texts []string
	for n, t := range r.texts {
		names, texts = append(names, n), append(texts, t)
	}
	r.AnswerChars, r.AnswerTokens = map[string]int{}, map[string]int{}
	counts := countTokens(ctx, cfg.peerDir, texts, log)
	for i, n := range names {
		r.AnswerChars[n] = utf8.RuneCountInString(texts[i])
		if counts != nil {
			r.AnswerTokens[n] = counts["o200k"][i]
		}
	}
	if ref, ok := r.texts[referencePeer]; ok {
		refNodes := snapshotNodes(ref, escapesQuoted(referencePeer))
		r.Fidelity = map[string]*nodeDiff{}
		for n, t := range r.texts {
			if n == referencePeer || ownFormat(n) {
				continue
			}
			d := diffNodes(refNodes, snapshotNodes(t, escapesQuoted(n)))
			r.Fidelity[n] = &d
			log.Info("fidelity", "server", n, "page", r.Page, "nodes", d.Nodes, "reference_nodes", d.RefNodes, "differ", d.Differ)
		}
	}
	if cfg.dumpDir != "" {
		if err := dumpTexts(cfg.dumpDir, corpusName, r.Page, r.texts); err != nil {
			log.Error("-dump", "err", err)
		}
	}
}

func (r *realResult) pagemux(ctx context.Context, cfg *config, s *server, url, tmp string, log *slog.Logger) error {
	log.Info("real page", "url", url)
	id, _, err := openPage(ctx, s, cfg, url)
	if err != nil {
		return err
	}
	defer s.call(ctx, cfg.callTimeout, "close_page", map[string]any{"pageId": id})
	if rep := s.call(ctx, cfg.callTimeout, "evaluate_script", map[string]any{"pageId": id, "function": toggleJS}); rep.err != nil || rep.isError {
		return fmt.Errorf("adding the toggle: %s", rep.failure())
	}
	args := map[string]any{"pageId": id, "mode": "full"}
	r.TimesMS["pagemux"], _ = medianCall(ctx, cfg, cfg.realReps, s, "take_snapshot", args)
	def := s.call(ctx, 2*cfg.callTimeout, "take_snapshot", args)
	if def.err != nil || def.isError {
		return fmt.Errorf("take_snapshot: %s", def.failure())
	}
	// The whole tree, saved: a snapshot the agent has seen whole, so the
	// click's incremental answer is a diff (an outlined default answer does
	// not count as seen, and the click would answer the whole tree again).
	file := filepath.Join(tmp, "full.txt")
	if rep := s.call(ctx, 2*cfg.callTimeout, "take_snapshot", map[string]any{"pageId": id, "filePath": file}); rep.err != nil || rep.isError {
		return fmt.Errorf("take_snapshot filePath: %s", rep.failure())
	}
	full, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	uid := uidOf(string(full), `button "Toggle"`)
	click := s.call(ctx, 2*cfg.callTimeout, "click", map[string]any{"pageId": id, "uid": uid, "includeSnapshot": true})
	if click.err != nil || click.isError {
		return fmt.Errorf("click %s: %s", uid, click.failure())
	}
	fullClick := "Successfully clicked on the element\n" + string(full)
	r.Full, r.Default, r.Incremental = utf8.RuneCount(full), utf8.RuneCountInString(def.text), utf8.RuneCountInString(click.text)
	r.Tokens = countTokens(ctx, cfg.peerDir, []string{fullClick, def.text, click.text}, log)
	return nil
}

// medianCall makes one warm-up call and reps timed ones and returns their
// median in ms and the last answer (0 and "" when a call failed).
func medianCall(ctx context.Context, cfg *config, reps int, s *server, name string, args map[string]any) (float64, string) {
	var took []time.Duration
	var last string
	for i := range reps + 1 {
		rep := s.call(ctx, 2*cfg.callTimeout, name, args)
		if rep.err != nil || rep.isError {
			s.log.Error("timed call failed", "tool", name, "err", rep.failure())
			return 0, ""
		}
		last = rep.text
		if i > 0 {
			took = append(took, rep.took)
		}
	}
	slices.Sort(took)
	median := ms(rank(took, 0.50)) // stats.go
	s.log.Info("take_snapshot times", "args", s.cmd.Args[1:min(2, len(s.cmd.Args))], "tool", name, "min_ms", ms(took[0]), "median_ms", median, "max_ms", ms(took[len(took)-1]))
	return median, last
}

// countTokens counts o200k_base tokens with peers/tokens.mjs; nil when the
// peers are not installed.
func countTokens(ctx context.Context, dir string, texts []string, log *slog.Logger) map[string][]int {
	in, _ := json.Marshal(texts)
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "tokens.mjs"))
	cmd.Stdin, cmd.Stderr = strings.NewReader(string(in)), os.Stderr
	out, err := cmd.Output()
	if err != nil {
		log.Warn("no token counts (./scripts/bench installs js-tiktoken)", "err", err)
		return nil
	}
	var counts []struct{ O200k, Cl100k int }
	if err := json.Unmarshal(out, &counts); err != nil || len(counts) != len(texts) {
		return nil
	}
	m := map[string][]int{}
	for _, c := range counts {
		m["o200k"] = append(m["o200k"], c.O200k)
		m["cl100k"] = append(m["cl100k"], c.Cl100k)
	}
	return m
}

// printReal prints the sizes and times of the real pages, then each
// corpus's fidelity table and differing pages (fidelity.go).
func printReal(w io.Writer, cfg *config, cs []*corpus) {
	for _, c := range cs {
		if c.sizes {
			printSizes(w, cfg, c.rs)
		}
		printCompact(w, c.name, c.rs) // compact.go
		printFidelity(w, cfg, c)
	}
}

// printSizes prints the sizes and times of the real pages.
func printSizes(w io.Writer, cfg *config, rs []*realResult) {
	fmt.Fprintf(w, "\n== take_snapshot of real pages (testdata/real; sizes in characters / o200k tokens; time: median of %d) ==\n", cfg.realReps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	names := []string{"pagemux"}
	for _, v := range variants {
		names = append(names, variantName(v))
	}
	var peerNames []string
	for _, p := range peers(cfg.peerDir) {
		peerNames = append(peerNames, p.name)
	}
	names = append(names, peerNames...)
	fmt.Fprintln(tw, "page\tfull\tdefault answer\tincremental after a click\t"+strings.Join(names, "\t")+"\tpagemux / Node\tPlaywright / Node\tpagemux / Playwright")
	for _, r := range rs {
		if r.Failure != "" {
			// The other servers' times of the page still count.
			var others []string
			for _, n := range names[1:] {
				if v := r.TimesMS[n]; v > 0 {
					others = append(others, n+" "+fmtMS(v))
				}
			}
			fmt.Fprintf(tw, "%s\tFAILED on pagemux: %s; %s\n", r.Page, r.Failure, cmp.Or(strings.Join(others, ", "), "no other figures"))
			continue
		}
		tok := func(i int) string {
			if r.Tokens == nil {
				return "-"
			}
			return fmt.Sprint(r.Tokens["o200k"][i])
		}
		row := fmt.Sprintf("%s\t%d / %s\t%d / %s\t%d / %s (%.2f%%)", r.Page, r.Full, tok(0), r.Default, tok(1), r.Incremental, tok(2),
			100*float64(r.Incremental)/float64(r.Full))
		for _, n := range names {
			if v, ok := r.TimesMS[n]; ok && v > 0 {
				row += "\t" + fmtMS(v)
			} else {
				row += "\tn/a"
			}
		}
		node, pw := r.TimesMS[peerNames[0]], r.TimesMS[peerNames[1]]
		for _, q := range [][2]float64{{r.TimesMS["pagemux"], node}, {pw, node}, {r.TimesMS["pagemux"], pw}} {
			if q[0] > 0 && q[1] > 0 {
				row += fmt.Sprintf("\t%.2f×", q[0]/q[1])
			} else {
				row += "\tn/a"
			}
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n== the peers' own snapshot answers (characters / o200k tokens, counted as pagemux's) ==\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "page\tpagemux default\t"+strings.Join(peerNames, "\t"))
	for _, r := range rs {
		if len(r.AnswerChars) == 0 && r.Failure != "" {
			continue
		}
		row := r.Page + "\t" + fmt.Sprint(r.Default)
		if r.Failure != "" {
			row = r.Page + "\tn/a"
		} else if r.Tokens != nil {
			row += fmt.Sprintf(" / %d", r.Tokens["o200k"][1])
		}
		for _, n := range peerNames {
			if c, ok := r.AnswerChars[n]; ok {
				row += fmt.Sprintf("\t%d / %d", c, r.AnswerTokens[n])
			} else {
				row += "\tn/a"
			}
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}
