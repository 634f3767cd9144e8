package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// The "B while A is audited" phase: page A runs a real Lighthouse audit
// (lighthouse_audit with its defaults: navigation, desktop, accessibility,
// best practices and SEO) while page B gets quick calls one after another.
// In page mode B must not wait for the audit; in global mode it does.

// auditTimeout bounds the audit call: Lighthouse takes seconds, more on a
// loaded machine.
const auditTimeout = 3 * time.Minute

// auditAndProbe runs the phase and records it in r.BWhileAudit. A server
// without Lighthouse installed skips it with an anomaly that says how to
// install it.
func (r *modeResult) auditAndProbe(ctx context.Context, s *server, cfg *config, a, b int) {
	dir, err := os.MkdirTemp("", "pagemux-bench-reports-")
	if err != nil {
		r.anomaly("audit phase: %v", err)
		return
	}
	defer os.RemoveAll(dir)
	h := probeWhile(ctx, s, cfg, b, auditTimeout, func() reply {
		return s.call(ctx, auditTimeout, "lighthouse_audit", map[string]any{"pageId": a, "outputDirPath": dir})
	})
	if strings.Contains(h.AError, "./scripts/setup") {
		r.anomaly("audit phase skipped: %s", h.AError)
		return
	}
	r.BWhileAudit = h
	if h.AError != "" {
		r.anomaly("the audit of page A failed: %s", h.AError)
	}
	if h.B.Errors > 0 {
		r.anomaly("calls on page B during the audit failed (%d): %s", h.B.Errors, h.B.FirstError)
	}
	switch r.Mode {
	case "global":
		if h.FirstEndMS < 0.8*h.AMS {
			r.anomaly("global mode: the first call on page B was answered %s after the audit began, which took %s; it should have waited for it", fmtMS(h.FirstEndMS), fmtMS(h.AMS))
		}
	case "page":
		if h.Overlaps == 0 {
			r.anomaly("page mode: no call on page B finished while page A was audited")
		}
		if h.Notices > 0 {
			r.anomaly(`page mode: %d answer(s) on page B during the audit carried a "Waited" line`, h.Notices)
		}
	}
}

// auditRow is the phase's line in a mode's table.
func auditRow(h *holdResult) string {
	return fmt.Sprintf(" while A is audited by Lighthouse (first B call %s; the audit took %s; %d B calls done before it)",
		fmtMS(h.FirstMS), fmtMS(h.AMS), h.Overlaps)
}
