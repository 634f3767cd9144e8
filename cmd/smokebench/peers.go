package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// realPages are testdata/real's pages, served on loopback as they are.
var realPages = []string{
	"/go_spec.html", "/go_mem.html", "/asm.html", "/go1.html",
	"/rust/index.html", "/rust/releases.html", "/rust/std/vec/struct.Vec.html",
	"/rust/std/collections/struct.HashMap.html", "/rust/book/ch04-01-what-is-ownership.html",
	"/rust/book/print.html", "/rust/book/toc.html",
}

// brokenPages are broken on purpose, each in one way a CI check is for.
var brokenPages = map[string]string{
	"/broken/exception.html": `<p>An exception on load.</p><script>throw new Error("broken on load")</script>`,
	"/broken/image.html":     `<p>An image that is not there.</p><img src="/broken/nope.png" alt="a missing picture">`,
	"/broken/500.html":       `<p>The server failed.</p>`,
	"/broken/link.html":      `<p>A link to nowhere: <a href="/broken/no-such-page.html">read on</a>.</p>`,
	"/broken/contrast.html":  `<p style="color:#ccc;background:#fff">Grey on white, too faint to read.</p><img src="/rust/favicon.svg">`,
}

// brokenOrder is the broken pages in the table's order.
var brokenOrder = []string{"/broken/exception.html", "/broken/image.html", "/broken/500.html", "/broken/link.html", "/broken/contrast.html"}

// peerNames are the tools compared, in the order they run (after pagemux).
var peerNames = []string{"pa11y-ci", "lhci", "unlighthouse-ci", "linkinator"}

// peerRun is one tool's run over the pages: its wall time and the pages
// it flagged (paths), or why it could not run.
type peerRun struct {
	name    string
	wall    time.Duration
	flagged []string
	failed  string
}

// comparePeers serves the 16 pages, runs pagemux smoke and the CI tools of
// peers (an npm ci'd directory) over them, and prints wall times and what
// each caught.
func comparePeers(bin, peers string, tools []string) error {
	root, err := filepath.Abs("testdata/real")
	if err != nil {
		return err
	}
	if peers, err = filepath.Abs(peers); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(root)))
	for path, body := range brokenPages {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if path == "/broken/500.html" {
				w.WriteHeader(http.StatusInternalServerError)
			}
			fmt.Fprintf(w, `<!doctype html><html lang="en"><head><title>Broken: %s</title></head><body><main><h1>%s</h1>%s</main></body></html>`, path, path, body)
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	var urls []string
	for _, p := range append(slices.Clone(realPages), brokenOrder...) {
		urls = append(urls, base+p)
	}
	chrome := os.Getenv("CHROME_PATH")
	if chrome == "" {
		chrome = "/usr/bin/chromium"
	}
	var runs []peerRun
	// pagemux without Lighthouse checks accessibility with axe (--a11y),
	// as pa11y does; with it, by Lighthouse's score, as lhci does.
	for _, lh := range []bool{false, true} {
		// "pagemux" runs both; "pagemux-axe" or "pagemux-lighthouse" one.
		one := "pagemux-axe"
		if lh {
			one = "pagemux-lighthouse"
		}
		if !slices.Contains(tools, "pagemux") && !slices.Contains(tools, one) {
			continue
		}
		for _, par := range []int{1, 8} {
			args := []string{"--check-links", "--a11y", "wcag2aa"}
			name := fmt.Sprintf("pagemux smoke --check-links --a11y wcag2aa --parallel %d", par)
			if lh {
				args = []string{"--check-links", "--lighthouse", "accessibility=0.9"}
				name = fmt.Sprintf("pagemux smoke --check-links --lighthouse accessibility=0.9 --parallel %d", par)
			}
			runs = append(runs, pagemuxPeer(bin, name, par, args, urls, base))
		}
	}
	work, err := os.MkdirTemp("", "smokebench-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	peerRuns := map[string]func() peerRun{
		"pa11y-ci":        func() peerRun { return pa11yPeer(peers, work, chrome, urls, base) },
		"lhci":            func() peerRun { return lhciPeer(peers, work, chrome, urls, base) },
		"unlighthouse-ci": func() peerRun { return unlighthousePeer(peers, work, chrome, urls, base) },
		"linkinator":      func() peerRun { return linkinatorPeer(peers, work, urls, base) },
	}
	for _, name := range peerNames {
		if slices.Contains(tools, name) {
			runs = append(runs, peerRuns[name]())
		}
	}
	for _, r := range runs {
		fmt.Fprintf(os.Stderr, "%s flagged %q%s\n", r.name, r.flagged, r.failed)
	}
	fmt.Printf("\nThe 16 pages (%d of testdata/real, %d broken on purpose) on loopback, one run each:\n\n", len(realPages), len(brokenOrder))
	fmt.Printf("| tool | wall time | real pages flagged |")
	for _, p := range brokenOrder {
		fmt.Printf(" %s |", strings.TrimPrefix(p, "/broken/"))
	}
	fmt.Printf("\n|---|---|---|%s\n", strings.Repeat("---|", len(brokenOrder)))
	for _, r := range runs {
		if r.failed != "" {
			after := ""
			if r.wall > 0 {
				after = " after " + sec(r.wall)
			}
			fmt.Printf("| %s | could not run%s: %s |%s\n", r.name, after, r.failed, strings.Repeat(" |", len(brokenOrder)+1))
			continue
		}
		real := 0
		for _, p := range r.flagged {
			if slices.Contains(realPages, p) {
				real++
			}
		}
		fmt.Printf("| %s | %s | %d of %d |", r.name, sec(r.wall), real, len(realPages))
		for _, p := range brokenOrder {
			fmt.Printf(" %s |", map[bool]string{true: "caught", false: "missed"}[slices.Contains(r.flagged, p)])
		}
		fmt.Println()
	}
	return nil
}

// timed runs cmd with a bound and returns its wall time and output.
func timed(cmd *exec.Cmd) (time.Duration, []byte, error) {
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return time.Since(start), out, err
}

// command is name (in peers' node_modules/.bin) with args, in dir.
func command(peers, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(peers, "node_modules", ".bin", name), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PUPPETEER_SKIP_DOWNLOAD=1")
	// The peers' own Node 22 (the node package) first: unlighthouse-ci
	// and linkinator 8 need it, and the system's may be older.
	cmd.Env = append(cmd.Env, "PATH="+filepath.Join(peers, "node_modules", ".bin")+":"+os.Getenv("PATH"))
	return cmd
}

// pathsOf are the paths of the URLs on base.
func pathsOf(base string, urls []string) []string {
	var out []string
	for _, u := range urls {
		if p, ok := strings.CutPrefix(u, base); ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// pagemuxPeer runs pagemux smoke and reads which pages failed from its JSON.
func pagemuxPeer(bin, name string, parallel int, args, urls []string, base string) peerRun {
	dir, err := os.MkdirTemp("", "smokebench-")
	if err != nil {
		return peerRun{name: name, failed: err.Error()}
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "r.json")
	cmd := exec.Command(bin, slices.Concat([]string{"smoke", "--parallel", fmt.Sprint(parallel), "--json", path}, args, urls)...)
	wall, out, _ := timed(cmd)
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, wall.Round(time.Millisecond))
	var rep report
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		return peerRun{name: name, failed: fmt.Sprintf("no report (%v): %s", err, lastLine(out))}
	}
	var flagged []string
	for _, p := range rep.Pages {
		if !p.Passed {
			flagged = append(flagged, p.URL)
		}
	}
	return peerRun{name: name, wall: wall, flagged: pathsOf(base, flagged)}
}

// pa11yPeer runs pa11y-ci (axe and HTML_CodeSniffer at WCAG2AA, its
// default) on Chromium without its sandbox, as root needs.
func pa11yPeer(peers, work, chrome string, urls []string, base string) peerRun {
	const name = "pa11y-ci 4.1.1 (WCAG2AA)"
	cfg := map[string]any{
		"defaults": map[string]any{"timeout": 120000, "chromeLaunchConfig": map[string]any{"executablePath": chrome, "args": []string{"--no-sandbox"}}},
		"urls":     urls,
	}
	path := filepath.Join(work, "pa11y.json")
	if err := writeJSON(path, cfg); err != nil {
		return peerRun{name: name, failed: err.Error()}
	}
	// To a file, not a pipe: pa11y-ci exits before Node has written the
	// whole JSON to a pipe (14,019 issues here were cut short).
	outPath := filepath.Join(work, "pa11y-out.json")
	f, err := os.Create(outPath)
	if err != nil {
		return peerRun{name: name, failed: err.Error()}
	}
	cmd := command(peers, work, "pa11y-ci", "--config", path, "--json")
	cmd.Stdout = f
	start := time.Now()
	_ = cmd.Run()
	wall := time.Since(start)
	f.Close()
	out, _ := os.ReadFile(outPath)
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, wall.Round(time.Millisecond))
	var res struct {
		Results map[string][]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return peerRun{name: name, failed: fmt.Sprintf("unreadable output (%v): %s", err, lastLine(out))}
	}
	var flagged []string
	for u, issues := range res.Results {
		if len(issues) > 0 {
			flagged = append(flagged, u)
		}
	}
	return peerRun{name: name, wall: wall, flagged: pathsOf(base, flagged)}
}

// lhciPeer runs Lighthouse CI's collect (accessibility only, one run a
// page) and assert (a score of at least 0.9), as pagemux's Lighthouse runs.
func lhciPeer(peers, work, chrome string, urls []string, base string) peerRun {
	const name = "lhci 0.14 collect + assert (accessibility ≥ 0.9)"
	dir := filepath.Join(work, "lhci")
	os.MkdirAll(dir, 0o755)
	cfg := map[string]any{"ci": map[string]any{
		"collect": map[string]any{"url": urls, "numberOfRuns": 1, "chromePath": chrome,
			"settings": map[string]any{"onlyCategories": []string{"accessibility"}, "chromeFlags": "--headless=new --no-sandbox"}},
		"assert": map[string]any{"assertions": map[string]any{"categories:accessibility": []any{"error", map[string]any{"minScore": 0.9}}}},
	}}
	path := filepath.Join(dir, "lighthouserc.json")
	if err := writeJSON(path, cfg); err != nil {
		return peerRun{name: name, failed: err.Error()}
	}
	collect := command(peers, dir, "lhci", "collect", "--config="+path)
	collect.Env = append(collect.Env, "CHROME_PATH="+chrome)
	wall, out, err := timed(collect)
	if err != nil {
		return peerRun{name: name, wall: wall, failed: fmt.Sprintf("collect: %v: %s", err, lastLine(out))}
	}
	var flagged []string
	for _, m := range lhciRuntimeError.FindAllStringSubmatch(string(out), -1) {
		flagged = append(flagged, m[1])
	}
	assert := command(peers, dir, "lhci", "assert", "--config="+path)
	w2, out, _ := timed(assert)
	wall += w2
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, wall.Round(time.Millisecond))
	for _, m := range lhciResult.FindAllStringSubmatch(string(out), -1) {
		flagged = append(flagged, m[1])
	}
	return peerRun{name: name, wall: wall, flagged: pathsOf(base, flagged)}
}

var (
	// lhciResult heads an assertion's failures for a URL.
	lhciResult = regexp.MustCompile(`\d+ result\(s\) for (\S+)`)
	// lhciRuntimeError is collect's note of a page Lighthouse could not
	// load ("Running Lighthouse 1 time(s) on URL" then the error).
	lhciRuntimeError = regexp.MustCompile(`Running Lighthouse \d+ time\(s\) on (\S+)\s+Run #1\.\.\.failed!`)
)

// unlighthousePeer runs unlighthouse-ci on the given pages (no crawl),
// accessibility only, with a budget of 90.
func unlighthousePeer(peers, work, chrome string, urls []string, base string) peerRun {
	const name = "unlighthouse-ci 0.18 (accessibility, budget 90)"
	dir := filepath.Join(work, "unlighthouse")
	os.MkdirAll(dir, 0o755)
	// The options its flags lack, for Chromium as root.
	cfg := map[string]any{
		"lighthouseOptions": map[string]any{"onlyCategories": []string{"accessibility"}},
		"puppeteerOptions":  map[string]any{"executablePath": chrome, "args": []string{"--no-sandbox"}},
		"chrome":            map[string]any{"useSystem": true},
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "unlighthouse.config.js"), append([]byte("export default "), b...), 0o644); err != nil {
		return peerRun{name: name, failed: err.Error()}
	}
	out := filepath.Join(dir, "out")
	cmd := command(peers, dir, "unlighthouse-ci", "--config-file", "unlighthouse.config.js", "--site", base,
		"--urls", strings.Join(pathsOf(base, urls), ","), "--budget", "90", "--reporter", "json", "--output-path", out,
		"--desktop", "--disable-robots-txt", "--disable-sitemap", "--disable-dynamic-sampling", "--no-cache")
	cmd.Env = append(cmd.Env, "CHROME_PATH="+chrome)
	wall, text, err := timed(cmd)
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, wall.Round(time.Millisecond))
	b, rerr := os.ReadFile(filepath.Join(out, "ci-result.json"))
	if rerr != nil {
		return peerRun{name: name, wall: wall, failed: fmt.Sprintf("no ci-result.json (%v): %s", err, lastLine(text))}
	}
	var res []struct {
		Path          string   `json:"path"`
		Accessibility *float64 `json:"accessibility"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return peerRun{name: name, wall: wall, failed: err.Error()}
	}
	var flagged []string
	for _, r := range res {
		if r.Accessibility == nil || *r.Accessibility < 0.9 {
			flagged = append(flagged, r.Path)
		}
	}
	return peerRun{name: name, wall: wall, flagged: flagged}
}

// linkinatorPeer checks the pages' links (not recursing), as --check-links.
func linkinatorPeer(peers, work string, urls []string, base string) peerRun {
	const name = "linkinator 8.1 (links of the pages)"
	// Same-site links only, as --check-links: this machine has no other
	// network, and the real pages link out.
	skip := "^(?!" + regexp.QuoteMeta(base) + ")"
	cmd := command(peers, work, "linkinator", append(slices.Clone(urls), "--format", "json", "--skip", skip)...)
	start := time.Now()
	out, err := cmd.Output()
	wall := time.Since(start)
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, wall.Round(time.Millisecond))
	var res struct {
		Links []struct {
			State  string `json:"state"`
			Parent string `json:"parent"`
			URL    string `json:"url"`
		} `json:"links"`
	}
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		return peerRun{name: name, failed: fmt.Sprintf("%v (%v): %s", err, jerr, lastLine(out))}
	}
	var flagged []string
	for _, l := range res.Links {
		if l.State == "BROKEN" {
			if l.Parent == "" {
				flagged = append(flagged, l.URL) // a page given that itself is broken
			} else {
				flagged = append(flagged, l.Parent)
			}
		}
	}
	return peerRun{name: name, wall: wall, flagged: pathsOf(base, flagged)}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// lastLine is the last non-empty line of out, for an error.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
