package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
)

// TraceCategories are the trace categories pagemux records: those of the
// DevTools performance panel, without screenshots, JS sampling and script
// sources, which make a trace many times larger and which the summary does
// not read.
var TraceCategories = []string{
	"-*",
	"blink.console",
	"blink.user_timing",
	"devtools.timeline",
	"disabled-by-default-devtools.timeline",
	"disabled-by-default-devtools.timeline.frame",
	"disabled-by-default-devtools.timeline.stack",
	"disabled-by-default-layout_shift.debug",
	"latencyInfo",
	"loading",
	"navigation",
	"rail",
	"v8",
	"v8.execute",
}

// ErrTracingBusy means Chrome refused to start a trace because another
// client of the browser is tracing it.
const ErrTracingBusy Error = "chrome is already recording a trace for another client"

// readChunk is the most a single IO.read of a trace stream asks for.
const readChunk = 1 << 20

// Trace is a trace Chrome records from StartTrace until Stop. It is recorded
// on the browser's session, not the tab's, so it outlives the page it was
// started for: a trace whose page closed can still be stopped and saved.
// Like any Chrome trace it records the whole browser, every tab; it does not
// know which page's events matter, and the analysis picks them by frame.
// A Trace is not safe for concurrent Stops: its owner serialises them.
type Trace struct {
	// Started is when Chrome began recording.
	Started time.Time

	ctx    context.Context // on the browser session; ends when Stop returns
	cancel context.CancelFunc
}

// StartTrace makes Chrome record a trace with TraceCategories until Stop. It
// starts tracing only: it does not reload the page, and it takes no lock.
// It fails with ErrTracingBusy when another client of the browser traces.
func (cp Capture) StartTrace(ctx context.Context) (*Trace, error) {
	p := cp.p
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	// The trace belongs to the browser, not to this call nor to the tab.
	tctx, cancel := context.WithCancel(p.launch.rootCtx)
	cctx, stop := withCaller(tctx, ctx)
	defer stop()
	_, err := chromedp.CallBrowser(cctx, tracing.Start, tracing.StartParams{
		TransferMode: tracing.StartTransferModeReturnAsStream,
		StreamFormat: tracing.StreamFormatJSON,
		TraceConfig: &tracing.TraceConfig{
			RecordMode:         tracing.TraceConfigRecordModeRecordUntilFull,
			IncludedCategories: TraceCategories,
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			// Chrome may have started before the caller gave up: end that
			// trace, or no later start could begin. An end on a session
			// that is not tracing fails harmlessly.
			go func() {
				ectx, ecancel := context.WithTimeout(tctx, 5*time.Second)
				_, _ = chromedp.CallBrowser(ectx, tracing.End, cdp.Empty{})
				ecancel()
				cancel()
			}()
			return nil, ctx.Err()
		}
		cancel()
		if strings.Contains(err.Error(), "already") {
			return nil, fmt.Errorf("%w (%v); wait for it to finish, or stop it in that client", ErrTracingBusy, err)
		}
		return nil, fmt.Errorf("start tracing: %w", err)
	}
	return &Trace{Started: time.Now(), ctx: tctx, cancel: cancel}, nil
}

// Stop ends the trace and copies the trace JSON to w as Chrome streams it,
// chunk by chunk, so a large trace never sits in memory whole. dataLost says
// that Chrome's buffer filled up and the trace misses events. Stop must be
// called once for every started trace, also when the page closed; a failed
// Stop leaves Chrome tracing only if Chrome itself is gone.
func (t *Trace) Stop(ctx context.Context, w io.Writer) (dataLost bool, err error) {
	defer t.cancel()
	cctx, stop := withCaller(t.ctx, ctx)
	defer stop()
	// Subscribe first: tracingComplete may come before Tracing.end answers.
	events, cancelEvents := context.WithCancel(cctx)
	defer cancelEvents()
	complete := chromedp.BrowserEvents(events, tracing.TracingComplete)
	if _, err := chromedp.CallBrowser(cctx, tracing.End, cdp.Empty{}); err != nil {
		return false, fmt.Errorf("end tracing: %w", err)
	}
	var done tracing.EventTracingComplete
	for ev, err := range complete {
		if err != nil {
			return false, fmt.Errorf("wait for the trace: %w", err)
		}
		done = ev
		break
	}
	// Chrome's copy is freed under t.ctx, also when the caller gave up.
	_, err = readStream(cctx, t.ctx, done.Stream, true, "trace", w)
	return done.DataLossOccurred, err
}

// withCaller returns a context of base that also ends when caller ends.
func withCaller(base, caller context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(base)
	stop := context.AfterFunc(caller, func() { cancel(context.Cause(caller)) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

// Mark makes a user timing mark named name in the page and clears it at
// once, so that a trace shows which renderer thread is the page's. It waits
// at most a second, as a busy or blocked page must not hold up a trace, and
// it reports no error: a trace without the mark only knows less.
func (p *Page) Mark(ctx context.Context, name string) {
	if p.Ready(ctx) != nil || p.usable() != nil || p.Dialog() != nil {
		return
	}
	mctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	js, _ := json.Marshal(name)
	_ = p.await(mctx, func(ctx context.Context) error {
		_, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
			Expression: fmt.Sprintf("performance.mark(%s); performance.clearMarks(%s)", js, js),
			Silent:     new(true),
		})
		return err
	})
}

// describeJS says what an element is in a few words: its tag, id, classes
// and the start of its text.
const describeJS = `function() {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el) return '';
  let s = el.localName;
  if (el.id) s += '#' + el.id;
  for (const c of Array.from(el.classList).slice(0, 3)) s += '.' + c;
  if (el.localName === 'img' && el.currentSrc) s += ' src=' + JSON.stringify(el.currentSrc.slice(0, 100));
  const text = (el.innerText || el.textContent || '').trim().replace(/\s+/g, ' ');
  if (text) s += ' "' + (text.length > 60 ? text.slice(0, 57) + '...' : text) + '"';
  return s;
}`

// DescribeNodes describes the DOM nodes with the given backend node ids, such
// as the LCP element and the nodes a layout shift moved, as "h1#hero
// "Headline"". Nodes that no longer exist, or that live in another document
// than the current one, are left out: it never fails, it only knows less.
func (p *Page) DescribeNodes(ctx context.Context, ids []int64) map[int64]string {
	out := map[int64]string{}
	if len(ids) == 0 || p.Ready(ctx) != nil || p.usable() != nil || p.Dialog() != nil {
		return out
	}
	var mu sync.Mutex
	_ = p.await(ctx, func(ctx context.Context) error {
		for _, id := range ids {
			res, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: cdp.BackendNodeID(id)})
			if err != nil || res.Object == nil || res.Object.ObjectID == "" {
				continue
			}
			v, err := p.callFunction(ctx, describeJS, res.Object.ObjectID)
			_, _ = chromedp.Call(ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: res.Object.ObjectID})
			if err != nil {
				continue
			}
			var s string
			if json.Unmarshal(v, &s) == nil && s != "" {
				mu.Lock()
				out[id] = s
				mu.Unlock()
			}
		}
		return nil
	})
	// await may return before fn does: hand out a copy.
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(out)
}
