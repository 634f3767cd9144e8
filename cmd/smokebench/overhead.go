package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// overheadGoal is the most a page may cost beyond its own load and the
// quiet-network wait (issue 20).
const overheadGoal = 500 * time.Millisecond

// overheadIdle is the --network-idle the overhead runs give, smoke's default.
const overheadIdle = 500 * time.Millisecond

// phaseOrder is the order the table shows the phases in, smoke's own.
var phaseOrder = []string{"open", "navigate", "settle", "document", "console", "requests", "expect"}

// overheadRun is one row of the overhead table: pages checked at once.
type overheadRun struct {
	pages, parallel int
	runs            []time.Duration            // each repeat's report, Chrome's start excluded
	times           []time.Duration            // every page's whole check
	phases          map[string][]time.Duration // every page's time in each phase
	rest            []time.Duration            // every page's time outside the phases
}

// measureOverhead checks pages whose server answers after delay, one page
// alone and then pages at --parallel pages, repeat times each (interleaved),
// and prints where a page's time goes: each phase's median, and the
// overhead, the page's time beyond delay and --network-idle.
func measureOverhead(bin string, delay time.Duration, pages []int, repeat int, extra []string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: slowPages(delay)}
	go srv.Serve(ln)
	defer srv.Close()
	rows := make([]*overheadRun, len(pages))
	for i, n := range pages {
		rows[i] = &overheadRun{pages: n, parallel: n, phases: map[string][]time.Duration{}}
	}
	args := append([]string{"--network-idle", overheadIdle.String()}, extra...)
	for range repeat {
		for _, row := range rows {
			var urls []string
			for i := range row.pages {
				urls = append(urls, fmt.Sprintf("http://%s/overhead-%d", ln.Addr(), i))
			}
			rep, _, err := smoke(bin, row.parallel, append(slices.Clone(args), urls...))
			if err != nil {
				return err
			}
			row.add(rep)
			fmt.Fprintf(os.Stderr, "overhead, %d pages at --parallel %d: %v\n", row.pages, row.parallel, row.runs[len(row.runs)-1])
		}
	}
	fmt.Printf("\npagemux smoke, a page's own overhead: pages whose server answers after %v, --network-idle %v, medians of %d runs (every page's, for the phases):\n\n", delay, overheadIdle, repeat)
	fmt.Printf("| pages, --parallel | run (Chrome start excluded) | page | overhead per page (page − %v − %v) |", delay, overheadIdle)
	for _, name := range phaseOrder {
		fmt.Printf(" %s |", name)
	}
	fmt.Printf(" rest |\n|---|---|---|---|%s---|\n", strings.Repeat("---|", len(phaseOrder)))
	met := true
	for _, row := range rows {
		over := median(row.times) - delay - overheadIdle
		met = met && over <= overheadGoal
		fmt.Printf("| %d, %d | %s | %s | %s |", row.pages, row.parallel, sec(median(row.runs)), sec(median(row.times)), sec(over))
		for _, name := range phaseOrder {
			fmt.Printf(" %s |", sec(median(row.phases[name])))
		}
		fmt.Printf(" %s |\n", sec(median(row.rest)))
	}
	fmt.Printf("\nnavigate includes the server's %v, settle the %v of --network-idle; rest is the time outside the phases (the page's turn, its report).\n", delay, overheadIdle)
	fmt.Printf("goal: overhead per page ≤ %v: %s\n", overheadGoal, map[bool]string{true: "met", false: "missed"}[met])
	return nil
}

// add files one run's report.
func (row *overheadRun) add(rep *report) {
	row.runs = append(row.runs, ms(rep.DurationMs-rep.BrowserMs))
	for _, p := range rep.Pages {
		row.times = append(row.times, ms(p.TimeMs))
		rest := ms(p.TimeMs)
		for _, ph := range p.Phases {
			row.phases[ph.Name] = append(row.phases[ph.Name], ms(ph.TimeMs))
			rest -= ms(ph.TimeMs)
		}
		row.rest = append(row.rest, rest)
	}
}

// slowPages serves small pages that each take delay to answer, and no
// favicon, as a site without one answers Chrome's look for it.
func slowPages(delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			http.NotFound(w, r)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Page %s</title><main><h1>Page %s</h1></main></html>`, r.URL.Path, r.URL.Path)
	})
}

// median is the middle of ds (the lower of the two middles), 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
