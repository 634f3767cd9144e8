// Package perftrace reads a Chrome trace (the JSON of Tracing.start /
// Tracing.end, as DevTools saves it) and sums up one page's load the way an
// agent needs it: navigation, TTFB, FCP, LCP and its element, CLS and the
// nodes that shifted, long tasks and total blocking time, render-blocking and
// slow requests. It also explains each of those items in detail, as named
// insights.
//
// It needs no browser: it works on the trace events alone, so it is tested on
// small recorded and handwritten traces. It does not compute every DevTools
// insight, nor DevTools' estimated savings; it never guesses values the trace
// does not hold.
package perftrace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// Event is one trace event, with the fields the analysis reads. Times are in
// microseconds of Chrome's monotonic clock, as in the trace.
type Event struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	TS   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	PID  int64           `json:"pid"`
	TID  int64           `json:"tid"`
	Args json.RawMessage `json:"args"`
}

// End is when the event ended: its start for an instant event.
func (e *Event) End() float64 { return e.TS + e.Dur }

// Trace is the events of a trace that the analysis reads, in file order, and
// the bounds of all its events. It does not keep the events it has no use
// for, so a large trace costs little memory.
type Trace struct {
	Events []Event
	// Min and Max bound the timestamps of every event of the trace, also of
	// the events not kept.
	Min, Max float64
	// Count is the number of events in the trace, kept or not.
	Count int
}

// startMarkPrefix begins the names of StartMark's marks.
const startMarkPrefix = "pagemux-trace-start:"

// StartMark is the name of a user timing mark (performance.mark) that a
// tracer may make in the page right after the trace started: it tells the
// analysis which renderer thread is the page's, in a trace with no
// navigation, where nothing else in the trace says so.
func StartMark(frame string) string { return startMarkPrefix + frame }

// LongTaskMin is the duration, in microseconds, past which a main-thread
// task is a long task: it blocks input for the part over this.
const LongTaskMin = 50_000

// attributionMin is the shortest event kept to say what a long task did.
const attributionMin = 5_000

// kept are the events the analysis reads, by name.
var kept = map[string]bool{
	"TracingStartedInBrowser":            true,
	"FrameCommittedInBrowser":            true,
	"thread_name":                        true,
	"process_name":                       true,
	"navigationStart":                    true,
	"firstPaint":                         true,
	"firstContentfulPaint":               true,
	"largestContentfulPaint::Candidate":  true,
	"largestContentfulPaint::Invalidate": true,
	"LargestImagePaint::Candidate":       true,
	"LayoutShift":                        true,
	"MarkDOMContent":                     true,
	"MarkLoad":                           true,
	"ResourceWillSendRequest":            true,
	"ResourceSendRequest":                true,
	"ResourceReceiveResponse":            true,
	"ResourceReceivedData":               true,
	"ResourceFinish":                     true,
	"ResourceChangePriority":             true,
	"PreloadRenderBlockingStatusChange":  true,
}

// keep says whether the analysis reads e.
func keep(e *Event) bool {
	if kept[e.Name] || strings.HasPrefix(e.Name, startMarkPrefix) {
		return true
	}
	switch {
	case e.Name == "RunTask":
		return e.Dur > LongTaskMin
	case e.Ph == "X" && e.Dur >= attributionMin:
		return true // may say what a long task did
	}
	return false
}

// Parse reads a trace: either a JSON object with a "traceEvents" array, as
// Chrome streams it and DevTools saves it, or a bare array of events. It
// reads the events one at a time and keeps only those the analysis needs.
// Events it cannot decode are skipped; a trace with no events is an error.
func Parse(r io.Reader) (*Trace, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("read the trace: %w", err)
	}
	t := &Trace{Min: math.Inf(1), Max: math.Inf(-1)}
	switch tok {
	case json.Delim('['):
		err = t.readEvents(dec)
	case json.Delim('{'):
		err = t.readObject(dec)
	default:
		return nil, errors.New("read the trace: want a JSON object or array")
	}
	if err != nil {
		return nil, err
	}
	if t.Count == 0 {
		return nil, errors.New("the trace holds no events")
	}
	if math.IsInf(t.Min, 0) {
		t.Min, t.Max = 0, 0
	}
	return t, nil
}

// readObject reads the keys of a trace object, the events from traceEvents.
func (t *Trace) readObject(dec *json.Decoder) error {
	found := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read the trace: %w", err)
		}
		if key != "traceEvents" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fmt.Errorf("read the trace: %w", err)
			}
			continue
		}
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read the trace: %w", err)
		}
		if tok != json.Delim('[') {
			return errors.New("read the trace: traceEvents is not an array")
		}
		if err := t.readEvents(dec); err != nil {
			return err
		}
		found = true
	}
	if !found {
		return errors.New("read the trace: no traceEvents")
	}
	return nil
}

// readEvents reads the events of an array whose '[' was read, and its ']'.
func (t *Trace) readEvents(dec *json.Decoder) error {
	for dec.More() {
		var e Event
		if err := dec.Decode(&e); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				continue // the decoder read past it: skip this event only
			}
			return fmt.Errorf("read the trace: %w", err)
		}
		t.Count++
		if e.Ph != "M" && e.TS > 0 {
			t.Min = math.Min(t.Min, e.TS)
			t.Max = math.Max(t.Max, e.End())
		}
		if keep(&e) {
			t.Events = append(t.Events, e)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return fmt.Errorf("read the trace: %w", err)
	}
	return nil
}
