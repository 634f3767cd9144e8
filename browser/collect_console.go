package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/audits"
	"github.com/pagemux/pagemux/internal/jsonstr"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
)

// ConsoleMessage is one console message of a page: a console API call, an
// uncaught exception or unhandled promise rejection (type "error", with
// Exception set), or an entry of the browser log such as a failed resource.
// A ConsoleMessage does not change once recorded.
type ConsoleMessage struct {
	// ID is the msgid: it counts from 1 per page and never changes.
	ID int
	// Gen is the page generation of the document the message belongs to.
	Gen uint64
	// Type is chrome-devtools-mcp's type: "log", "warn", "error", "info",
	// "debug", "table", "assert", … ("warning" of the protocol is "warn").
	Type string
	// Text is the message as the DevTools console prints it.
	Text string
	// Args are the arguments of a console call or log entry; objects hold
	// a preview only (Page.ConsoleArgs reads them whole while they live).
	Args []*runtime.RemoteObject
	// Stack is where the message came from, nil when Chrome sent none.
	Stack *runtime.StackTrace
	// Exception is set for uncaught exceptions and unhandled rejections.
	Exception *runtime.ExceptionDetails
	// Source is the part of the browser that wrote a log entry ("network",
	// "security", …); empty for console calls and exceptions.
	Source string
	// URL, Line and Column (0-based) locate the message when known.
	URL          string
	Line, Column int64
}

// Console collects a page's console messages from its attach on (and those
// Chrome replays then, of the document it was showing), filed by document: a message belongs to the document whose execution context
// (or, for a log entry about a request, whose request) it came from. It
// keeps the current document and the PreservedDocuments before it,
// BucketCap messages each. It sends no command.
type Console struct {
	d   docSource
	net *Network

	mu       sync.Mutex
	ring     *ring[*ConsoleMessage]
	current  uint64
	contexts map[runtime.ExecutionContextID]uint64 // context → generation
	unique   map[string]runtime.ExecutionContextID // unique id → context, to forget destroyed ones
}

func newConsole(d docSource, net *Network) *Console {
	c := &Console{d: d, net: net, contexts: map[runtime.ExecutionContextID]uint64{}, unique: map[string]runtime.ExecutionContextID{}}
	c.current = d.gen()
	c.ring = newRing[*ConsoleMessage](c.current, BucketCap, PreservedDocuments+1, nil)
	return c
}

// Console returns the page's console collector.
func (p *Page) Console() *Console { return p.console }

// observe runs in the page's event loop: it files the event and returns.
func (c *Console) observe(ev any) {
	// Asked before taking c.mu, so the two collectors' locks never nest.
	var reqGen uint64
	var reqKnown bool
	if e, ok := ev.(*log.EventEntryAdded); ok && e.Entry.NetworkRequestID != "" {
		reqGen, reqKnown = c.net.genOf(e.Entry.NetworkRequestID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// No partial start here, unlike the network: on attach Chrome replays
	// the messages its console kept of the current document.
	switch ev := ev.(type) {
	case *page.EventFrameNavigated:
		if ev.Frame.ParentID == "" {
			c.current = c.d.gen()
			c.ring.navigate(c.current)
		}
	case *runtime.EventExecutionContextCreated:
		c.contexts[ev.Context.ID] = c.current
		c.unique[ev.Context.UniqueID] = ev.Context.ID
	case *runtime.EventExecutionContextDestroyed:
		if id, ok := c.unique[ev.ExecutionContextUniqueID]; ok {
			delete(c.contexts, id)
			delete(c.unique, ev.ExecutionContextUniqueID)
		}
	case *runtime.EventExecutionContextsCleared:
		// Ids start again in a new renderer: forget them all.
		clear(c.contexts)
		clear(c.unique)
	case *runtime.EventConsoleAPICalled:
		m := consoleCall(ev)
		c.add(c.genOfContext(ev.ExecutionContextID), m)
	case *runtime.EventExceptionThrown:
		m := consoleException(ev.ExceptionDetails)
		c.add(c.genOfContext(ev.ExceptionDetails.ExecutionContextID), m)
	case *audits.EventIssueAdded:
		c.add(c.current, consoleIssue(ev.Issue))
	case *log.EventEntryAdded:
		gen := c.current
		if reqKnown {
			gen = reqGen
		}
		c.add(gen, consoleLog(ev.Entry))
	}
}

func (c *Console) genOfContext(id runtime.ExecutionContextID) uint64 {
	if g, ok := c.contexts[id]; ok {
		return g
	}
	return c.current
}

func (c *Console) add(gen uint64, m *ConsoleMessage) {
	m.bound()
	c.ring.add(gen, func(id int) *ConsoleMessage { m.ID, m.Gen = id, gen; return m })
}

// List returns the messages of the current document, or with preserved
// those of the kept documents too, oldest first.
func (c *Console) List(preserved bool) ([]*ConsoleMessage, Completeness) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ring.list(preserved)
}

// Get returns the message with the msgid. A msgid that was given out but is
// no longer kept is an error that says so.
func (c *Console) Get(id int) (*ConsoleMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, _, ok := c.ring.get(id); ok {
		return m, nil
	}
	if c.ring.issued(id) {
		return nil, notFoundf("console message %d is no longer kept: pagemux keeps the messages of the current document and the %d before it, at most %d each; call list_console_messages for the ids kept", id, PreservedDocuments, BucketCap)
	}
	return nil, notFoundf("no console message with msgid %d on this page; call list_console_messages for the ids", id)
}

// MaxKeptText bounds each text a console message keeps: its Text, each
// string argument, an error's description. A page decides how long they
// are, and the collector keeps BucketCap messages for each of
// 1+PreservedDocuments documents: unbounded, a page that logs a 10 MB
// string in a loop would hold gigabytes of pagemux's memory.
const MaxKeptText = 16 << 10

// bound cuts the message's texts to MaxKeptText, each with a note that
// says how long it was. It copies what it changes: the arguments are the
// event's, which other observers may hold.
func (m *ConsoleMessage) bound() {
	m.Text = cutKept(m.Text)
	cloned := false
	for i, a := range m.Args {
		b := boundObject(a)
		if b == a {
			continue
		}
		if !cloned {
			m.Args, cloned = slices.Clone(m.Args), true
		}
		m.Args[i] = b
	}
	if d := m.Exception; d != nil {
		if o := boundObject(d.Exception); o != d.Exception || len(d.Text) > MaxKeptText {
			cp := *d
			cp.Text, cp.Exception = cutKept(d.Text), o
			m.Exception = &cp
		}
	}
}

// boundObject returns o, or a copy of it with its string value and its
// description cut to MaxKeptText.
func boundObject(o *runtime.RemoteObject) *runtime.RemoteObject {
	if o == nil || len(o.Description) <= MaxKeptText && len(o.Value) <= MaxKeptText {
		return o // a string's JSON is no shorter than the string
	}
	s, isString := stringValue(o)
	if len(o.Description) <= MaxKeptText && (!isString || len(s) <= MaxKeptText) {
		return o
	}
	cp := *o
	cp.Description = cutKept(o.Description)
	if isString {
		cp.Value = []byte(jsonstr.Quote(cutKept(s), false))
	}
	return &cp
}

// cutKept cuts s to MaxKeptText bytes (at a character's start) and says
// how long it was.
func cutKept(s string) string {
	if len(s) <= MaxKeptText {
		return s
	}
	n := MaxKeptText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… <%d bytes in all; pagemux keeps the first %d of a console message's text>", len(s), MaxKeptText)
}

// consoleCall turns a console API call into a message.
func consoleCall(ev *runtime.EventConsoleAPICalled) *ConsoleMessage {
	m := &ConsoleMessage{Type: string(ev.Type), Args: ev.Args, Stack: ev.StackTrace}
	if m.Type == string(runtime.ConsoleAPICalledTypeWarning) {
		m.Type = "warn"
	}
	m.Text = ConsoleText(ev.Args)
	switch ev.Type {
	case runtime.ConsoleAPICalledTypeAssert:
		m.Text = strings.TrimSpace("Assertion failed: " + m.Text)
	case runtime.ConsoleAPICalledTypeTrace, runtime.ConsoleAPICalledTypeStartGroup, runtime.ConsoleAPICalledTypeStartGroupCollapsed, runtime.ConsoleAPICalledTypeEndGroup:
		if m.Text == "" {
			m.Text = "console." + map[runtime.ConsoleAPICalledType]string{
				runtime.ConsoleAPICalledTypeTrace:               "trace",
				runtime.ConsoleAPICalledTypeStartGroup:          "group",
				runtime.ConsoleAPICalledTypeStartGroupCollapsed: "groupCollapsed",
				runtime.ConsoleAPICalledTypeEndGroup:            "groupEnd",
			}[ev.Type]
		}
	}
	m.locate(ev.StackTrace)
	return m
}

// consoleException turns an uncaught exception or unhandled rejection into
// an error message: "Uncaught Error: kaboom", "Uncaught (in promise) 42".
func consoleException(d *runtime.ExceptionDetails) *ConsoleMessage {
	m := &ConsoleMessage{Type: "error", Exception: d, Stack: d.StackTrace, URL: d.URL, Line: d.LineNumber, Column: d.ColumnNumber}
	m.Text = d.Text
	if d.Exception != nil {
		if what := exceptionSummary(d.Exception); what != "" {
			m.Text = strings.TrimSpace(m.Text + " " + what)
		}
	}
	if m.URL == "" {
		m.locate(d.StackTrace)
	}
	return m
}

// exceptionSummary is the thrown value as DevTools prints it after
// "Uncaught": an error's first lines without its stack, else the value.
func exceptionSummary(o *runtime.RemoteObject) string {
	if o.Type == runtime.RemoteObjectTypeString {
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
	}
	return errorMessage(FormatValue(o))
}

// errorMessage cuts an error's description before its stack.
func errorMessage(desc string) string {
	if i := strings.Index(desc, "\n    at "); i >= 0 {
		return desc[:i]
	}
	return desc
}

// consoleLog turns a browser log entry into a message.
func consoleLog(e *log.Entry) *ConsoleMessage {
	typ := string(e.Level)
	if e.Level == log.EntryLevelWarning {
		typ = "warn"
	}
	m := &ConsoleMessage{Type: typ, Text: e.Text, Args: e.Args, Stack: e.StackTrace, Source: string(e.Source), URL: e.URL, Line: e.LineNumber}
	if m.URL == "" {
		m.locate(e.StackTrace)
	}
	return m
}

func (m *ConsoleMessage) locate(st *runtime.StackTrace) {
	if st != nil && len(st.CallFrames) > 0 {
		f := st.CallFrames[0]
		m.URL, m.Line, m.Column = f.URL, f.LineNumber, f.ColumnNumber
	}
}

// ConsoleText renders console arguments as the DevTools console prints
// them: strings as they are, other values in a compact JSON-like form from
// their preview ({"ok":true}), and printf directives (%s %d %i %f %o %O %c)
// in a first string argument applied to the arguments after it.
func ConsoleText(args []*runtime.RemoteObject) string {
	if len(args) == 0 {
		return ""
	}
	var parts []string
	rest := args
	if s, ok := stringValue(args[0]); ok {
		text, used := consoleFormat(s, args[1:])
		parts = append(parts, text)
		rest = args[1+used:]
	}
	for _, a := range rest {
		parts = append(parts, consoleArg(a))
	}
	return strings.Join(parts, " ")
}

// consoleArg renders one argument at the top level, where strings are bare.
func consoleArg(o *runtime.RemoteObject) string {
	if s, ok := stringValue(o); ok {
		return s
	}
	return FormatValue(o)
}

func stringValue(o *runtime.RemoteObject) (string, bool) {
	if o == nil || o.Type != runtime.RemoteObjectTypeString {
		return "", false
	}
	var s string
	if err := json.Unmarshal(o.Value, &s); err != nil {
		return "", false
	}
	return s, true
}

// consoleFormat applies the printf directives of format to args and
// returns the text and how many args it used.
func consoleFormat(format string, args []*runtime.RemoteObject) (string, int) {
	if !strings.Contains(format, "%") {
		return format, 0
	}
	var b strings.Builder
	used := 0
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' || i+1 >= len(format) {
			b.WriteByte(ch)
			continue
		}
		verb := format[i+1]
		if verb == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		if !strings.ContainsRune("sdifoOc", rune(verb)) || used >= len(args) {
			b.WriteByte(ch)
			continue
		}
		a := args[used]
		used++
		i++
		switch verb {
		case 's':
			if s, ok := stringValue(a); ok {
				b.WriteString(s)
			} else if a.Description != "" && a.Type == runtime.RemoteObjectTypeObject {
				b.WriteString(a.Description)
			} else {
				b.WriteString(FormatValue(a))
			}
		case 'd', 'i', 'f':
			b.WriteString(formatNumber(a, verb != 'f'))
		case 'o', 'O':
			b.WriteString(FormatValue(a))
		case 'c': // CSS: no text
		}
	}
	return b.String(), used
}

func formatNumber(o *runtime.RemoteObject, integer bool) string {
	var f float64
	switch {
	case o.Type == runtime.RemoteObjectTypeNumber && json.Unmarshal(o.Value, &f) == nil:
	case o.Type == runtime.RemoteObjectTypeString:
		s, _ := stringValue(o)
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return "NaN"
		}
	default:
		return "NaN"
	}
	if integer {
		f = math.Trunc(f)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// FormatValue renders a value in a compact JSON-like form: strings quoted,
// objects and arrays from their preview ({"ok":true}, [1,2], with … when
// the preview is cut), other objects by their description. It does not
// fetch anything: objects show what their preview holds.
func FormatValue(o *runtime.RemoteObject) string {
	if o == nil {
		return "undefined"
	}
	switch o.Type {
	case runtime.RemoteObjectTypeString:
		s, _ := stringValue(o)
		return jsonstr.Quote(s, false)
	case runtime.RemoteObjectTypeUndefined:
		return "undefined"
	case runtime.RemoteObjectTypeNumber, runtime.RemoteObjectTypeBigint:
		if o.UnserializableValue != "" {
			return string(o.UnserializableValue)
		}
		if o.Description != "" {
			return o.Description
		}
		return string(o.Value)
	case runtime.RemoteObjectTypeBoolean:
		return string(o.Value)
	case runtime.RemoteObjectTypeFunction:
		return functionLabel(o.Description)
	}
	switch o.Subtype {
	case runtime.RemoteObjectSubtypeNull:
		return "null"
	case runtime.RemoteObjectSubtypeError:
		return errorMessage(o.Description) // its stack is for the details
	}
	if o.Preview != nil && (o.Subtype == "" || o.Subtype == runtime.RemoteObjectSubtypeArray) && o.ClassName != "Window" {
		return formatPreview(o.Preview)
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.Type)
}

// functionLabel is "ƒ name()" as DevTools prints a function.
func functionLabel(desc string) string {
	name := strings.TrimSpace(desc)
	name = strings.TrimPrefix(name, "async ")
	name = strings.TrimPrefix(name, "function")
	name = strings.TrimPrefix(name, "*")
	name = strings.TrimSpace(name)
	if i := strings.IndexAny(name, "( ="); i >= 0 {
		name = name[:i]
	}
	return "ƒ " + name + "()"
}

// formatPreview renders an object or array preview, nested previews too.
func formatPreview(p *runtime.ObjectPreview) string {
	var parts []string
	array := p.Subtype == runtime.ObjectPreviewSubtypeArray || p.Subtype == runtime.ObjectPreviewSubtypeTypedarray
	for _, prop := range p.Properties {
		v := formatProperty(prop)
		if array {
			parts = append(parts, v)
		} else {
			parts = append(parts, jsonstr.Quote(prop.Name, false)+":"+v)
		}
	}
	for _, e := range p.Entries {
		v := formatPreview(e.Value)
		if e.Key != nil {
			v = formatPreview(e.Key) + " => " + v
		}
		parts = append(parts, v)
	}
	if p.Overflow {
		parts = append(parts, "…")
	}
	body := strings.Join(parts, ",")
	switch {
	case array:
		return "[" + body + "]"
	case p.Type != runtime.ObjectPreviewTypeObject || p.Subtype != "" && len(p.Properties) == 0 && len(p.Entries) == 0:
		return p.Description // a primitive or an object known by its description
	case len(p.Entries) > 0 || p.Subtype == runtime.ObjectPreviewSubtypeMap || p.Subtype == runtime.ObjectPreviewSubtypeSet:
		return p.Description + " {" + body + "}"
	}
	return "{" + body + "}"
}

func formatProperty(prop *runtime.PropertyPreview) string {
	if prop.ValuePreview != nil {
		return formatPreview(prop.ValuePreview)
	}
	switch prop.Type {
	case runtime.PropertyPreviewTypeString:
		return jsonstr.Quote(prop.Value, false)
	case runtime.PropertyPreviewTypeFunction:
		return "ƒ"
	case runtime.PropertyPreviewTypeAccessor:
		return "(...)"
	case runtime.PropertyPreviewTypeObject:
		if prop.Value == "Object" {
			return "{…}" // a nested object the preview does not open
		}
	}
	return prop.Value
}

// maxArgJSON bounds the JSON of one argument read whole.
const maxArgJSON = 10000

// ConsoleArgs renders the message's arguments in full: strings as they are,
// objects as their JSON read from the page while their document lives,
// errors with their stack. An object that can no longer be read (its
// document is gone, or a dialog blocks the page) shows its preview with a
// note. Call it holding the page's lock.
func (p *Page) ConsoleArgs(ctx context.Context, m *ConsoleMessage) []string {
	out := make([]string, len(m.Args))
	live := p.Ready(ctx) == nil && p.Dialog() == nil && p.Generation() == m.Gen
	for i, a := range m.Args {
		switch {
		case a.Type == runtime.RemoteObjectTypeString:
			out[i], _ = stringValue(a)
		case a.Subtype == runtime.RemoteObjectSubtypeError:
			out[i] = a.Description
		case a.ObjectID == "" || a.Type != runtime.RemoteObjectTypeObject ||
			a.Subtype != "" && a.Subtype != runtime.RemoteObjectSubtypeArray:
			// Nodes, maps, dates…: JSON would say less than their preview.
			out[i] = FormatValue(a)
		case !live:
			out[i] = FormatValue(a) + " (a preview: its document is gone or a dialog blocks the page)"
		default:
			if v, err := p.objectJSON(ctx, a.ObjectID); err == nil {
				out[i] = v
			} else {
				out[i] = FormatValue(a) + " (a preview: the object could not be read whole)"
			}
		}
	}
	return out
}

// objectJSON reads an object by value, as compact JSON.
func (p *Page) objectJSON(ctx context.Context, id runtime.RemoteObjectID) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var out string
	err := p.await(ctx, func(ctx context.Context) error {
		v, err := p.callFunction(ctx, "function() { return JSON.stringify(this); }", id)
		if err != nil {
			return err
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("the object has no JSON form")
		}
		out = s
		return nil
	})
	if len(out) > maxArgJSON {
		out = out[:maxArgJSON] + fmt.Sprintf("… (cut: %d bytes in all)", len(out))
	}
	return out, err
}
