package perftrace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MainFrame is the page's main frame, as a TracingStartedInBrowser event
// lists it.
type MainFrame struct {
	Frame     string
	URL       string
	ProcessID int64
}

// MainFrame returns the main frame the summary followed, with the URL and
// renderer process of its first insight set.
func (s *Summary) MainFrame() MainFrame {
	f := MainFrame{Frame: s.Frame, URL: s.URL}
	if len(s.Sets) > 0 {
		first := s.Sets[0]
		f.ProcessID = first.PID
		if first.URL != "" {
			f.URL = first.URL
		}
	}
	return f
}

// WithMainFrame copies a trace from r to w and gives each
// TracingStartedInBrowser event that lists no frames the page's main frame.
// Chrome lists none in a trace recorded on the browser's session, and
// DevTools refuses to open a trace without them. It holds one event at a
// time, so it copies a trace of any size; it does not otherwise change,
// sort or check the events.
func WithMainFrame(w io.Writer, r io.Reader, f MainFrame) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	dec := json.NewDecoder(r)
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("read the trace: %w", err)
	}
	switch tok {
	case json.Delim('['):
		err = copyEvents(bw, dec, f)
	case json.Delim('{'):
		err = copyObject(bw, dec, f)
	default:
		err = errors.New("read the trace: want a JSON object or array")
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

func copyObject(w *bufio.Writer, dec *json.Decoder, f MainFrame) error {
	w.WriteByte('{')
	for i := 0; dec.More(); i++ {
		key, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read the trace: %w", err)
		}
		k, _ := json.Marshal(key)
		if i > 0 {
			w.WriteByte(',')
		}
		w.Write(k)
		w.WriteByte(':')
		if key == "traceEvents" {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("read the trace: %w", err)
			}
			if tok != json.Delim('[') {
				return errors.New("read the trace: traceEvents is not an array")
			}
			if err := copyEvents(w, dec, f); err != nil {
				return err
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("read the trace: %w", err)
		}
		w.Write(raw)
	}
	if _, err := dec.Token(); err != nil { // '}'
		return fmt.Errorf("read the trace: %w", err)
	}
	return w.WriteByte('}')
}

// copyEvents copies an array whose '[' was read, and its ']'.
func copyEvents(w *bufio.Writer, dec *json.Decoder, f MainFrame) error {
	w.WriteByte('[')
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("read the trace: %w", err)
		}
		if i > 0 {
			w.WriteByte(',')
		}
		if bytes.Contains(raw, []byte(`"TracingStartedInBrowser"`)) {
			raw = addFrame(raw, f)
		}
		w.Write(raw)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return fmt.Errorf("read the trace: %w", err)
	}
	return w.WriteByte(']')
}

// addFrame gives a TracingStartedInBrowser event the main frame if it lists
// no frames; any other event comes back as it was.
func addFrame(raw json.RawMessage, f MainFrame) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep timestamps as Chrome wrote them
	var ev map[string]any
	if dec.Decode(&ev) != nil || ev["name"] != "TracingStartedInBrowser" || f.Frame == "" {
		return raw
	}
	args, _ := ev["args"].(map[string]any)
	if args == nil {
		args = map[string]any{}
	}
	data, _ := args["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	if frames, _ := data["frames"].([]any); len(frames) > 0 {
		return raw
	}
	data["frames"] = []any{map[string]any{
		"frame":                f.Frame,
		"url":                  f.URL,
		"name":                 "",
		"processId":            f.ProcessID,
		"isOutermostMainFrame": true,
		"isInPrimaryMainFrame": true,
	}}
	data["persistentIds"] = true
	args["data"] = data
	ev["args"] = args
	out, err := json.Marshal(ev)
	if err != nil {
		return raw
	}
	return out
}
