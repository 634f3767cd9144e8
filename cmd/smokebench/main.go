// Command smokebench times `pagemux smoke` over pages that each take the
// same time to load: 16 pages of 500 ms by default, at --parallel 1, 4 and
// 16. It prints the wall time of each run and the goal: --parallel 16
// within 2× the slowest single page (the slowest page's whole check at
// --parallel 1, where it has Chrome to itself).
//
// Then (over HTTP/1.1, unless -overhead-delay=0) it measures a page's own
// overhead: pages whose server answers after 1.5 s, one alone and eight at
// --parallel 8, three runs each, and prints each phase's median (the
// report's phases) and what a page costs beyond its server and
// --network-idle; the goal is 0.5 s (overhead.go).
//
// With -peers DIR it does only the comparison (peers.go): testdata/real's
// pages and five broken on purpose, checked by pagemux smoke (serial and
// --parallel 8, with and without Lighthouse accessibility) and by the CI
// tools npm ci'd in DIR, with each one's wall time and what it caught.
//
// The binary is $PAGEMUX_BIN (scripts/bench sets it) or -bin; it serves its
// pages on loopback.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type report struct {
	DurationMs int64 `json:"durationMs"`
	BrowserMs  int64 `json:"browserStartMs"`
	Passed     bool  `json:"passed"`
	Pages      []struct {
		URL    string `json:"url"`
		Passed bool   `json:"passed"`
		LoadMs int64  `json:"loadMs"`
		TimeMs int64  `json:"timeMs"`
		Phases []struct {
			Name   string `json:"name"`
			TimeMs int64  `json:"timeMs"`
		} `json:"phases"`
	} `json:"pages"`
}

// result is one run's figures.
type result struct {
	parallel      int
	wall          time.Duration // the command, Chrome's start and stop included
	run           time.Duration // the pages: the report's duration less Chrome's start
	slowest, load time.Duration // the slowest page's whole check, and its load
}

func main() {
	bin := flag.String("bin", os.Getenv("PAGEMUX_BIN"), "pagemux `binary` (default $PAGEMUX_BIN)")
	pages := flag.Int("pages", 16, "pages per run")
	delay := flag.Duration("delay", 500*time.Millisecond, "how long each page's server takes to answer")
	levels := flag.String("parallel", "1,4,16", "--parallel values to run, comma-separated")
	extra := flag.String("args", "", "more `flags` for pagemux smoke, space-separated (such as --process-per-site)")
	h2 := flag.Bool("h2", false, "serve the pages over HTTP/2 with TLS (a test certificate Chrome is told to accept) instead of HTTP/1.1")
	overDelay := flag.Duration("overhead-delay", 1500*time.Millisecond, "the overhead runs' pages' server answer `time`; 0 skips them")
	overPages := flag.String("overhead-pages", "1,8", "the overhead runs: this many pages at --parallel as many, comma-separated")
	overRepeat := flag.Int("overhead-runs", 3, "how many times each overhead run is repeated (interleaved), for medians")
	overOnly := flag.Bool("overhead-only", false, "run only the overhead runs")
	peers := flag.String("peers", "", "compare with the CI tools npm ci'd in `DIR` (cmd/smokebench/peers) on 16 pages, and do only that")
	peerTools := flag.String("peer-tools", "pagemux,pa11y-ci,lhci,unlighthouse-ci,linkinator", "the tools -peers runs, comma-separated (pagemux-axe or pagemux-lighthouse: one of pagemux's two)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "smokebench: give -bin or set PAGEMUX_BIN (scripts/bench does)")
		os.Exit(2)
	}
	if *peers != "" {
		if err := comparePeers(*bin, *peers, strings.Split(*peerTools, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "smokebench:", err)
			os.Exit(1)
		}
		return
	}
	if *overDelay > 0 && !*h2 {
		defer func() {
			if err := measureOverhead(*bin, *overDelay, counts(*overPages), *overRepeat, strings.Fields(*extra)); err != nil {
				fmt.Fprintln(os.Stderr, "smokebench:", err)
				os.Exit(1)
			}
		}()
		if *overOnly {
			return
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "smokebench:", err)
		os.Exit(1)
	}
	handler := slowPages(*delay)
	scheme := "http"
	if *h2 {
		// HTTP/2 over TLS, as most sites are served: one connection carries
		// every page, where HTTP/1.1 lets Chrome open six to a host.
		srv := httptest.NewUnstartedServer(handler)
		srv.Listener.Close()
		srv.Listener, srv.EnableHTTP2 = ln, true
		srv.StartTLS()
		defer srv.Close()
		scheme = "https"
		*extra += " --chrome-arg=--ignore-certificate-errors"
	} else {
		go http.Serve(ln, handler)
	}
	var urls []string
	for i := range *pages {
		urls = append(urls, fmt.Sprintf("%s://%s/page-%d", scheme, ln.Addr(), i))
	}
	var rs []result
	for _, n := range counts(*levels) {
		r, err := runSmoke(*bin, n, append(strings.Fields(*extra), urls...))
		if err != nil {
			fmt.Fprintln(os.Stderr, "smokebench:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "--parallel %d: %v\n", n, r.run.Round(time.Millisecond))
		rs = append(rs, r)
	}
	fmt.Printf("pagemux smoke, %d pages whose server answers after %v, over %s:\n\n", *pages, *delay, map[bool]string{false: "HTTP/1.1", true: "HTTP/2"}[*h2])
	fmt.Printf("| --parallel | wall time (Chrome start and stop included) | pages (report, Chrome start excluded) | slowest page (load) |\n|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Printf("| %d | %s | %s | %s (%s) |\n", r.parallel, sec(r.wall), sec(r.run), sec(r.slowest), sec(r.load))
	}
	if rs[0].parallel != 1 || len(rs) < 2 {
		return // the goal compares with a page alone: -parallel 1 first
	}
	single := rs[0].slowest
	last := rs[len(rs)-1]
	met := last.run <= 2*single
	fmt.Printf("\ngoal: --parallel %d within 2× the slowest single page (%s at --parallel %d): %s, %.2f×, %s\n",
		last.parallel, sec(single), rs[0].parallel, sec(last.run), last.run.Seconds()/single.Seconds(), map[bool]string{true: "met", false: "missed"}[met])
}

// counts reads a list of counts such as 1,4,16, or exits.
func counts(list string) []int {
	var ns []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "smokebench: %q: want counts such as 1,4,16\n", list)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	return ns
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// runSmoke runs the binary once and reads its figures.
func runSmoke(bin string, parallel int, urls []string) (result, error) {
	rep, wall, err := smoke(bin, parallel, urls)
	if err != nil {
		return result{}, err
	}
	r := result{parallel: parallel, wall: wall, run: ms(rep.DurationMs - rep.BrowserMs)}
	for _, p := range rep.Pages {
		if ms(p.TimeMs) > r.slowest {
			r.slowest, r.load = ms(p.TimeMs), ms(p.LoadMs)
		}
	}
	return r, nil
}

// smoke runs the binary once, at --parallel parallel, and returns its JSON
// report and wall time; a page that failed is an error.
func smoke(bin string, parallel int, urls []string) (*report, time.Duration, error) {
	dir, err := os.MkdirTemp("", "smokebench-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "r.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"smoke", "--parallel", strconv.Itoa(parallel), "--json", path}, urls...)...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	wall := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, 0, err
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil {
		return nil, 0, fmt.Errorf("--parallel %d: no report (%v): %s", parallel, err, out)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, 0, err
	}
	if !rep.Passed {
		return nil, 0, fmt.Errorf("--parallel %d: a page failed:\n%s", parallel, out)
	}
	return &rep, wall, nil
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
