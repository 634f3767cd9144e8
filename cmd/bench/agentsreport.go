package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printAgents prints the many-agents figures: one table of every N in both
// lock modes, where the time went, and the quick calls while others hold.
func printAgents(w io.Writer, cfg *config, rs []*agentsResult) {
	if len(rs) == 0 {
		return
	}
	servers := "pagemux --http"
	if cfg.replicas > 1 {
		fsync := "fsync on"
		if !cfg.etcdFsync {
			fsync = "--unsafe-no-fsync"
		}
		servers = fmt.Sprintf("%d pagemux --http replicas sharing their locks through etcd (%s, %s), attached to %d Chromes; agent i on replica i mod %d",
			cfg.replicas, cfg.etcdBin, fsync, cfg.chromes, cfg.replicas)
	}
	fmt.Fprintf(w, "\n== many agents over HTTP (%s, loopback, no token: one MCP session = one agent, each on its own page; "+
		"%d × evaluate_script of an in-page %v wait per agent, all agents at once) ==\n", servers, cfg.agentCalls, cfg.agentWait)
	for _, r := range rs {
		if r.Failure != "" {
			fmt.Fprintf(w, "%s mode FAILED: %s\n", r.Mode, r.Failure)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "agents\tserial sum\t"
	for _, r := range rs {
		head += r.Mode + ": wall\tspeedup\t"
		if r.Mode == "page" {
			head += fmt.Sprintf("goal ≥ %.1f·N\t", agentGoalFactor)
		}
	}
	fmt.Fprintln(tw, head+"\t")
	for i, n := range cfg.agents {
		serial := ms(cfg.agentWait) * float64(n*cfg.agentCalls)
		cells := fmt.Sprintf("%d\t%s\t", n, fmtMS(serial))
		for _, r := range rs {
			var run *agentRun
			if i < len(r.Runs) {
				run = r.Runs[i]
			}
			switch {
			case run == nil:
				cells += "-\t-\t"
			case run.Failure != "" && run.Calls.Samples == 0:
				cells += "failed\t-\t"
			default:
				cells += fmt.Sprintf("%s\t%.2f×\t", fmtMS(run.WallMS), run.Speedup)
			}
			if r.Mode == "page" {
				switch {
				case run == nil:
					cells += "-\t"
				case run.Met:
					cells += fmt.Sprintf("%.1f met\t", run.GoalSpeedup)
				default:
					cells += fmt.Sprintf("%.1f MISSED\t", run.GoalSpeedup)
				}
			}
		}
		fmt.Fprintln(tw, cells+"\t")
	}
	tw.Flush()
	met, all := 0, 0
	for _, r := range rs {
		if r.Mode != "page" {
			continue
		}
		for _, run := range r.Runs {
			all++
			if run.Met {
				met++
			}
		}
	}
	if all > 0 {
		fmt.Fprintf(w, "page mode speedup goal (≥ %.1f·N) met for %d of %d N\n", agentGoalFactor, met, all)
	}

	fmt.Fprintln(w, "\nwhere the time went (each call's round trip at the client; the server's own time per call from /metrics; CPU seconds over the run;"+
		" Chrome's UI renderer draws each window's address bar popup; other: the rest of the machine; Chrome idle before: while the pages sat idle for -agent-settle):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tagents\tcall p50\tcall p99\tmax\tserver per call\tlock wait\tCPU busy\tserver\tChrome\tpages' renderers\tChrome UI renderer\tclients\tother\tChrome idle before\t")
	for _, r := range rs {
		for _, run := range r.Runs {
			p := run.Where
			if p == nil || run.Calls.Samples == 0 {
				fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t\n", r.Mode, run.Agents)
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.0f%% of %d\t%.2f s\t%.2f s\t%.2f s\t%.2f s\t%.2f s\t%.2f s\t%s\t\n", r.Mode, run.Agents,
				fmtMS(run.Calls.P50), fmtMS(run.Calls.P99), fmtMS(run.Calls.Max), fmtMS(p.ToolMeanMS), fmtMS(p.LockWaitMeanMS),
				100*p.CPUBusy, p.CPUs, p.CPUServerS, p.CPUChromeS, p.CPUChromeByType["renderer"], p.CPUChromeByType["webui-renderer"],
				p.CPUBenchS, p.CPUOtherS, idleCores(run))
		}
	}
	tw.Flush()
	for _, r := range rs {
		for _, run := range r.Runs {
			if p := run.Where; p != nil && p.EtcdAcquireMeanMS > 0 {
				fmt.Fprintf(w, "%s mode, %d agents: a call took %s to get its lock in etcd, on average (in the server's time per call)\n", r.Mode, run.Agents, fmtMS(p.EtcdAcquireMeanMS))
			}
		}
	}

	for _, r := range rs {
		q := r.Quick
		if q == nil {
			continue
		}
		verdict := "MISSED"
		if q.Met {
			verdict = "met"
		}
		fmt.Fprintf(w, "\nquick calls on a free page while %d agents hold %v scripts on their own pages (%s mode):\n", q.Holders, cfg.hold, r.Mode)
		if q.Quick.Samples == 0 {
			fmt.Fprintf(w, "  no quick call answered while the holds ran (%d failed: %s)\n", q.QuickFailed, q.Quick.FirstError)
			continue
		}
		fmt.Fprintf(w, "  %s: p50 %s, p99 %s, max %s (%d calls, first %s; longest hold %s): goal p99 ≤ %s %s\n",
			q.Quick.Name, fmtMS(q.Quick.P50), fmtMS(q.Quick.P99), fmtMS(q.Quick.Max), q.Quick.Samples, fmtMS(q.FirstQuick),
			fmtMS(q.HoldsMS), fmtMS(goalQuickMS), verdict)
		if p := q.Where; p != nil {
			fmt.Fprintf(w, "  CPU busy %.0f%% of %d; CPU s: server %.2f, Chrome %.2f (pages' renderers %.2f, Chrome UI renderer %.2f), clients %.2f, other %.2f\n",
				100*p.CPUBusy, p.CPUs, p.CPUServerS, p.CPUChromeS, p.CPUChromeByType["renderer"], p.CPUChromeByType["webui-renderer"], p.CPUBenchS, p.CPUOtherS)
		}
	}
	for _, r := range rs {
		if len(r.Anomalies) == 0 {
			continue
		}
		fmt.Fprintf(w, "anomalies (%s mode, many agents):\n", r.Mode)
		for _, a := range r.Anomalies {
			fmt.Fprintf(w, "  - %s\n", a)
		}
	}
}

// agentsFailed says whether the many-agents runs failed, and whether a goal
// was missed.
func agentsFailed(rs []*agentsResult) (failed, missed bool) {
	for _, r := range rs {
		failed = failed || r.Failure != ""
		for _, run := range r.Runs {
			failed = failed || run.Failure != ""
			missed = missed || !run.Met
		}
		if q := r.Quick; q != nil {
			failed = failed || q.Quick.Errors > 0 || q.HoldErrors > 0 || q.Quick.Samples == 0
			missed = missed || !q.Met
		}
	}
	return failed, missed
}

// idleCores is the CPU Chrome spent while the run's pages sat idle before
// it, in cores, "-" when not measured.
func idleCores(run *agentRun) string {
	if run.Idle == nil || run.IdleMS <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f cores", run.Idle.CPUChromeS/(run.IdleMS/1000))
}
