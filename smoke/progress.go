package smoke

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress tells, on stderr, how the run goes. Live (a terminal) it keeps a
// block of one line per page in flight, redrawn ten times a second, with the
// finished pages printed above it; otherwise it writes a plain line per
// finished page, as CI logs want.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	live   bool
	names  []string
	origin string // what names leave out, when they are paths
	total  int
	done   int
	active map[int]activity
	shown  int    // lines of the live block on screen
	state  string // what the run as a whole does, when not checking pages
	stop   chan struct{}
	wg     sync.WaitGroup
}

type activity struct {
	state string
	since time.Time // the page's start
}

func newProgress(w io.Writer, live bool, names []string) *progress {
	p := &progress{w: w, live: live, names: names, total: len(names), active: map[int]activity{}, stop: make(chan struct{})}
	if live {
		p.wg.Add(1)
		go p.tick()
	}
	return p
}

// isTerminal says whether w is a terminal, for the live display: not
// merely a character device, as /dev/null is.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *progress) tick() {
	defer p.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.redraw(nil)
			p.mu.Unlock()
		}
	}
}

// set says what page n is doing now.
func (p *progress) set(n int, state string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.active[n]
	if !ok {
		a.since = time.Now()
	}
	a.state = state
	p.active[n] = a
}

// add makes a page more to show, numbered after those before: a page
// --crawl found. Its name is its path when the pages so far are named by
// theirs.
func (p *progress) add(url string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	name := url
	if p.origin != "" && strings.HasPrefix(url, p.origin+"/") {
		name = strings.TrimPrefix(url, p.origin)
	}
	p.names = append(p.names, name)
	p.total++
}

// status says what the run does before it checks pages ("" when it does).
func (p *progress) status(state string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = state
}

// finish prints page n's outcome.
func (p *progress) finish(n int, pg *Page) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.active, n)
	p.done++
	p.print(fmt.Sprintf("%s %s  %s  %s%s", verdict(pg), p.names[n], statusText(pg), fmtDuration(pg.Load.D()), problemSummary(pg, " — ")))
}

// note prints a line of its own.
func (p *progress) note(msg string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.print(msg)
}

// print writes a permanent line, above the live block when there is one.
func (p *progress) print(line string) {
	if !p.live {
		fmt.Fprintln(p.w, line)
		return
	}
	p.redraw([]string{line})
}

// redraw clears the live block, writes the permanent lines, and draws the
// block again.
func (p *progress) redraw(permanent []string) {
	var b strings.Builder
	if p.shown > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.shown)
	}
	b.WriteString("\r\x1b[J")
	for _, l := range permanent {
		b.WriteString(l + "\n")
	}
	p.shown = 0
	if p.live && p.total > 0 {
		ids := make([]int, 0, len(p.active))
		for n := range p.active {
			ids = append(ids, n)
		}
		sort.Ints(ids)
		spin := spinner[int(time.Now().UnixMilli()/100)%len(spinner)]
		for _, n := range ids {
			a := p.active[n]
			line := fmt.Sprintf("  %c %s  %s  %s", spin, p.names[n], a.state, fmtDuration(time.Since(a.since)))
			if r := []rune(line); len(r) > 110 {
				line = string(r[:109]) + "…"
			}
			b.WriteString(line + "\n")
			p.shown++
		}
		if p.state != "" {
			fmt.Fprintf(&b, "  %s\n", p.state)
		} else {
			fmt.Fprintf(&b, "  %d of %d pages checked\n", p.done, p.total)
		}
		p.shown++
	}
	io.WriteString(p.w, b.String())
}

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// close stops the live display and clears its block.
func (p *progress) close() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	if p.live {
		p.mu.Lock()
		p.total = 0
		p.redraw(nil)
		p.mu.Unlock()
	}
}

func verdict(pg *Page) string {
	if pg.Passed {
		return "PASS"
	}
	return "FAIL"
}

// statusText is the page's HTTP status, or "-" without one.
func statusText(pg *Page) string {
	if pg.Status == 0 {
		return "-"
	}
	return fmt.Sprint(pg.Status)
}

// problemSummary is "2 errors, 1 warning: first problem", after sep; "" when
// the page has no problem.
func problemSummary(pg *Page, sep string) string {
	probs := pg.Problems()
	if len(probs) == 0 {
		return ""
	}
	var errs, warns int
	for _, pr := range probs {
		if pr.Severity == Error {
			errs++
		} else {
			warns++
		}
	}
	var parts []string
	if errs > 0 {
		parts = append(parts, plural(errs, "error"))
	}
	if warns > 0 {
		parts = append(parts, plural(warns, "warning"))
	}
	first := probs[0]
	for _, pr := range probs {
		if pr.Severity == Error {
			first = pr
			break
		}
	}
	return sep + strings.Join(parts, ", ") + ": " + first.Message
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// fmtDuration is "312ms" below a second, "1.24s" above.
func fmtDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
