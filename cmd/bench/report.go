package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// The Node chrome-devtools-mcp measured on this machine (from the issue).
const (
	refEvaluateMS = 208
	refActionMS   = 250 // click and fill, "~250 ms"
	refRSSMB      = 195
	refBWaitMS    = 5100 // a call on page B behind a 5 s script on page A
	// A call on page B behind a 5.3 s lighthouse_audit of page A.
	refAuditBWaitMS = 5200
)

// The goals pagemux is held to.
const (
	goalEvaluateMS = 20
	goalActionMS   = 80
	goalRSSMB      = 40
	goalPageBMS    = 50 // page mode, p99 of B's calls
	// Page mode, p99 of B's calls while A is audited: Lighthouse's Node
	// process competes for the CPU.
	goalAuditBMS = 100
)

// goal is one figure against its limit.
type goal struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Unit  string  `json:"unit"`
	Met   bool    `json:"met"`
}

func goals(r *modeResult) []goal {
	var gs []goal
	add := func(name string, v, limit float64, unit string, have bool) {
		gs = append(gs, goal{Name: name, Value: v, Limit: limit, Unit: unit, Met: have && v <= limit})
	}
	add("evaluate_script p50", r.Evaluate.P50, goalEvaluateMS, "ms", r.Evaluate.Samples > 0)
	add("click p50", r.Click.P50, goalActionMS, "ms", r.Click.Samples > 0)
	add("fill p50", r.Fill.P50, goalActionMS, "ms", r.Fill.Samples > 0)
	add("server peak RSS", r.RSSPeakMB, goalRSSMB, "MB", r.RSSPeakMB > 0)
	if r.Mode == "page" && r.BWhileA != nil {
		add("page B p99 while A holds", r.BWhileA.B.P99, goalPageBMS, "ms", r.BWhileA.B.Samples > 0)
	}
	if r.Mode == "page" && r.BWhileAudit != nil {
		add("page B p99 while A is audited", r.BWhileAudit.B.P99, goalAuditBMS, "ms", r.BWhileAudit.B.Samples > 0)
	}
	return gs
}

// printMode prints one lock mode's table.
func printMode(w io.Writer, cfg *config, r *modeResult) {
	fmt.Fprintf(w, "\n== pagemux --lock-mode=%s  (pid %d; n=%d, hold=%v; wall-clock per call, after %d warm-up calls) ==\n",
		r.Mode, r.PID, cfg.n, cfg.hold, warmups)
	if r.Failure != "" {
		fmt.Fprintf(w, "FAILED: %s\n", r.Failure)
	}
	fmt.Fprintf(w, "startup: initialize %s, first new_page %s (includes Chrome's launch); exit after stdin closed %s\n",
		fmtMS(r.InitializeMS), fmtMS(r.FirstPageMS), fmtMS(r.CloseMS))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "calls\terrors\tp50\tp99\tmin\tmax\t\t")
	row := func(s *series, note string) {
		if s.Samples == 0 {
			fmt.Fprintf(tw, "%d\t%d\t-\t-\t-\t-\t\t%s\n", s.Calls, s.Errors, s.Name)
		} else {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t\t%s%s\n", s.Calls, s.Errors, fmtMS(s.P50), fmtMS(s.P99), fmtMS(s.Min), fmtMS(s.Max), s.Name, note)
		}
	}
	row(r.Evaluate, "")
	row(r.Click, "")
	row(r.Fill, "")
	if h := r.BWhileA; h != nil {
		row(h.B, fmt.Sprintf(" while A runs a %v script (first B call %s; A took %s; %d B calls done before A)",
			cfg.hold, fmtMS(h.FirstMS), fmtMS(h.AMS), h.Overlaps))
	}
	if h := r.BWhileAudit; h != nil {
		row(h.B, auditRow(h))
	}
	if b := r.Bursts; b != nil {
		row(b.Burst, fmt.Sprintf(" (its own server; %d of %d bursts out of order)", b.OutOfOrder, b.Bursts))
	}
	tw.Flush()
	fmt.Fprintf(w, "server peak RSS (VmHWM of pid %d, Chrome excluded): %.1f MB (VmRSS at the end %.1f MB)\n", r.PID, r.RSSPeakMB, r.RSSEndMB)
	for _, s := range []*series{r.Evaluate, r.Click, r.Fill} {
		if s.FirstError != "" {
			fmt.Fprintf(w, "first error of %s:\n%s\n", s.Name, indent(s.FirstError))
		}
	}
	if h := r.BWhileA; h != nil && h.B.FirstError != "" {
		fmt.Fprintf(w, "first error on page B:\n%s\n", indent(h.B.FirstError))
	}
	if h := r.BWhileAudit; h != nil && h.B.FirstError != "" {
		fmt.Fprintf(w, "first error on page B during the audit:\n%s\n", indent(h.B.FirstError))
	}
	if len(r.Anomalies) == 0 {
		fmt.Fprintln(w, "anomalies: none")
	} else {
		fmt.Fprintln(w, "anomalies:")
		for _, a := range r.Anomalies {
			fmt.Fprintf(w, "  - %s\n", a)
		}
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// printComparison prints the figures of every mode next to the Node
// reference and the goals.
func printComparison(w io.Writer, cfg *config, rs []*modeResult) {
	fmt.Fprintf(w, "\n== pagemux vs Node chrome-devtools-mcp (reference measured on this machine) ==\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "figure\treference (Node)\tgoal"
	for _, r := range rs {
		head += "\t" + r.Mode
	}
	fmt.Fprintln(tw, head)
	line := func(name, ref, goalText string, limit float64, value func(r *modeResult) (string, float64, bool, bool)) {
		cells := name + "\t" + ref + "\t" + goalText
		for _, r := range rs {
			text, v, have, judged := value(r)
			switch {
			case !have:
				text = "n/a"
			case judged && v <= limit:
				text += " ok"
			case judged:
				text += " MISSED"
			}
			cells += "\t" + text
		}
		fmt.Fprintln(tw, cells)
	}
	for _, f := range []struct {
		name  string
		ref   string
		limit float64
		s     func(*modeResult) *series
	}{
		{"evaluate_script p50", fmtMS(refEvaluateMS), goalEvaluateMS, func(r *modeResult) *series { return r.Evaluate }},
		{"click p50", "~" + fmtMS(refActionMS), goalActionMS, func(r *modeResult) *series { return r.Click }},
		{"fill p50", "~" + fmtMS(refActionMS), goalActionMS, func(r *modeResult) *series { return r.Fill }},
	} {
		line(f.name, f.ref, "≤ "+fmtMS(f.limit), f.limit, func(r *modeResult) (string, float64, bool, bool) {
			s := f.s(r)
			return fmtMS(s.P50), s.P50, s.Samples > 0, true
		})
	}
	line("server peak RSS", fmt.Sprintf("%d MB", refRSSMB), fmt.Sprintf("≤ %d MB", goalRSSMB), goalRSSMB, func(r *modeResult) (string, float64, bool, bool) {
		return fmt.Sprintf("%.1f MB", r.RSSPeakMB), r.RSSPeakMB, r.RSSPeakMB > 0, true
	})
	line(fmt.Sprintf("page B call behind a %v script on A", cfg.hold), "waits "+fmtMS(refBWaitMS), "page: p99 ≤ "+fmtMS(goalPageBMS), goalPageBMS,
		func(r *modeResult) (string, float64, bool, bool) {
			h := r.BWhileA
			if h == nil || h.B.Samples == 0 {
				return "", 0, false, false
			}
			if r.Mode == "page" {
				return fmt.Sprintf("p99 %s (p50 %s, %d calls)", fmtMS(h.B.P99), fmtMS(h.B.P50), h.B.Calls), h.B.P99, true, true
			}
			return fmt.Sprintf("waits %s, answered %s after A began (by design)", fmtMS(h.FirstMS), fmtMS(h.FirstEndMS)), h.FirstMS, true, false
		})
	line("page B call behind a lighthouse_audit of A", "waits "+fmtMS(refAuditBWaitMS), "page: p99 ≤ "+fmtMS(goalAuditBMS), goalAuditBMS,
		func(r *modeResult) (string, float64, bool, bool) {
			h := r.BWhileAudit
			if h == nil || h.B.Samples == 0 {
				return "", 0, false, false
			}
			if r.Mode == "page" {
				return fmt.Sprintf("p99 %s (p50 %s, %d calls, audit %s)", fmtMS(h.B.P99), fmtMS(h.B.P50), h.B.Calls, fmtMS(h.AMS)), h.B.P99, true, true
			}
			return fmt.Sprintf("waits %s behind a %s audit (by design)", fmtMS(h.FirstMS), fmtMS(h.AMS)), h.FirstMS, true, false
		})
	tw.Flush()
	met, all := 0, 0
	for _, r := range rs {
		for _, g := range r.Goals {
			all++
			if g.Met {
				met++
			}
		}
	}
	fmt.Fprintf(w, "goals met: %d of %d\n", met, all)
}

// report is what -json writes.
type report struct {
	Time      time.Time          `json:"time"`
	Bin       string             `json:"bin"`
	N         int                `json:"n"`
	HoldMS    float64            `json:"hold_ms"`
	Reference map[string]float64 `json:"reference_node_chrome_devtools_mcp"`
	Modes     []*modeResult      `json:"modes"`
	Agents    *agentsReport      `json:"many_agents,omitempty"`  // agents.go
	Big       *bigResult         `json:"big_snapshot,omitempty"` // bigsnap.go
	// Snapshots are the corpora's pages by corpus name ("real", "apg"):
	// times, sizes and fidelity (realsnap.go, fidelity.go).
	Snapshots map[string][]*realResult `json:"snapshots,omitempty"`
}

// agentsReport is the many-agents benchmark in the JSON.
type agentsReport struct {
	CallsEach   int             `json:"calls_per_agent"`
	WaitMS      float64         `json:"wait_ms"`
	GoalFactor  float64         `json:"page_goal_speedup_per_agent"`
	GoalQuickMS float64         `json:"goal_quick_p99_ms"`
	Modes       []*agentsResult `json:"modes"`
}

func writeJSON(path string, cfg *config, bin string, rs []*modeResult, ags []*agentsResult, big *bigResult, cs []*corpus) error {
	rep := report{Time: time.Now().UTC(), Bin: bin, N: cfg.n, HoldMS: ms(cfg.hold), Modes: rs, Big: big,
		Reference: map[string]float64{
			"evaluate_script_p50_ms": refEvaluateMS,
			"click_fill_p50_ms":      refActionMS,
			"server_rss_peak_mb":     refRSSMB,
			"page_b_wait_ms":         refBWaitMS,
			"page_b_audit_wait_ms":   refAuditBWaitMS,
		}}
	if len(ags) > 0 {
		rep.Agents = &agentsReport{CallsEach: cfg.agentCalls, WaitMS: ms(cfg.agentWait), GoalFactor: agentGoalFactor,
			GoalQuickMS: goalQuickMS, Modes: ags}
	}
	for _, c := range cs {
		if rep.Snapshots == nil {
			rep.Snapshots = map[string][]*realResult{}
		}
		rep.Snapshots[c.name] = c.rs
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "() => 1" readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
