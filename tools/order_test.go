package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/soak"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/serve"
)

// rawEnv is a server with two clients: the in-process one of testEnv, for
// setting pages up, and raw JSON-RPC lines over the stdio transport, for what
// no SDK sends: many requests in one write, odd ids, cancellations by id.
type rawEnv struct {
	*testEnv
	in  io.Writer     // the server's stdin
	out *bufio.Reader // the server's stdout
}

// newRawEnv serves a leased server of opts (lease_test.go) over a stdio
// transport of the test's own.
func newRawEnv(t *testing.T, opts pagelock.Options) *rawEnv {
	t.Helper()
	e := leaseEnv(t, opts, Options{})
	serverRead, clientWrite := io.Pipe()
	clientRead, serverWrite := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serve.ServeStdio(ctx, e.srv.MCP(), serverRead, serverWrite, serve.StdioOptions{})
		serverWrite.Close()
	}()
	t.Cleanup(func() {
		clientWrite.Close()
		cancel()
		go io.Copy(io.Discard, clientRead) // let the last answers be written
		<-done
	})
	r := &rawEnv{testEnv: e, in: clientWrite, out: bufio.NewReaderSize(clientRead, 1<<20)}
	r.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.answers(t, 1)
	return r
}

// send writes the lines in one write, as a client that pipelines does.
func (r *rawEnv) send(t *testing.T, lines ...string) {
	t.Helper()
	if _, err := io.WriteString(r.in, strings.Join(lines, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
}

// rawAnswer is a response line as read, with its id kept as written.
type rawAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	line string
}

// text is the tool result's text, or the protocol error's message.
func (a rawAnswer) text() string {
	if a.Error != nil {
		return fmt.Sprintf("protocol error %d: %s", a.Error.Code, a.Error.Message)
	}
	var b strings.Builder
	if a.Result != nil {
		for _, c := range a.Result.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// answers reads n responses, skipping notifications, in the order written.
func (r *rawEnv) answers(t *testing.T, n int) []rawAnswer {
	t.Helper()
	type read struct {
		a   []rawAnswer
		err error
	}
	ch := make(chan read, 1)
	go func() {
		var got []rawAnswer
		for len(got) < n {
			line, err := r.out.ReadString('\n')
			if err != nil {
				ch <- read{got, err}
				return
			}
			var a rawAnswer
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				ch <- read{got, fmt.Errorf("bad line %q: %w", line, err)}
				return
			}
			if len(a.ID) == 0 {
				continue // a notification
			}
			a.line = line
			got = append(got, a)
		}
		ch <- read{got, nil}
	}()
	select {
	case rd := <-ch:
		if rd.err != nil {
			t.Fatalf("reading answers (%d of %d read): %v", len(rd.a), n, rd.err)
		}
		return rd.a
	case <-time.After(2 * time.Minute):
		t.Fatalf("no %d answers within 2 minutes", n)
		return nil
	}
}

// byID indexes answers by their id as written.
func byID(as []rawAnswer) map[string]rawAnswer {
	m := make(map[string]rawAnswer, len(as))
	for _, a := range as {
		m[string(a.ID)] = a
	}
	return m
}

// callLine is a tools/call request line.
func callLine(id any, tool string, args map[string]any) string {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestBurstOrder writes bursts of ten evaluate_script calls on one page in
// one write each (8 bursts, 100 with PAGEMUX_SOAK=1): the page must see
// every burst in the order written, in both modes, although mcp-go serves
// each call on a goroutine of its own.
func TestBurstOrder(t *testing.T) {
	t.Parallel()
	for _, mode := range []pagelock.Mode{pagelock.Global, pagelock.PerPage} {
		t.Run(mode.String(), func(t *testing.T) {
			e := newRawEnv(t, pagelock.Options{Mode: mode, Timeout: time.Minute, MaxQueue: 64})
			page := e.openPage(t, "/form.html")
			id := 0
			for burst := range soak.N(8, 100) {
				e.eval(t, page, "() => { window.__order = []; return 0 }")
				lines := make([]string, 10)
				for i := range lines {
					id++
					lines[i] = callLine(id, "evaluate_script", map[string]any{"pageId": page,
						"function": fmt.Sprintf("() => { window.__order.push(%d); return %d }", i, i)})
				}
				e.send(t, lines...)
				for _, a := range e.answers(t, len(lines)) {
					if a.Result == nil || a.Result.IsError {
						t.Fatalf("burst %d: %s", burst, a.text())
					}
				}
				if got := e.eval(t, page, "() => window.__order.join(',')"); got != `"0,1,2,3,4,5,6,7,8,9"` {
					t.Fatalf("burst %d ran in the order %s, want 0,1,…,9", burst, got)
				}
			}
		})
	}
}

// TestBurstMixedTools pipelines fill, click and take_snapshot, as an agent's
// parallel tool calls arrive: the snapshot must show what the click did with
// what fill typed.
func TestBurstMixedTools(t *testing.T) {
	t.Parallel()
	for _, mode := range []pagelock.Mode{pagelock.Global, pagelock.PerPage} {
		t.Run(mode.String(), func(t *testing.T) {
			e := newRawEnv(t, pagelock.Options{Mode: mode, Timeout: time.Minute, MaxQueue: 64})
			page := e.openPage(t, "/form.html")
			e.eval(t, page, `() => {
				const out = document.createElement('p');
				out.id = 'echo';
				document.body.append(out);
				const b = document.createElement('button');
				b.textContent = 'Echo it';
				b.onclick = () => { out.textContent = 'echo:' + document.querySelector('#name').value; };
				document.body.append(b);
				return 0 }`)
			snap := e.ok(t, "take_snapshot", map[string]any{"pageId": page})
			input, button := uidIn(t, snap, `textbox "Name"`), uidIn(t, snap, `button "Echo it"`)
			for i := range 10 {
				value := fmt.Sprintf("v%d", i)
				e.send(t,
					callLine(fmt.Sprintf("fill-%d", i), "fill", map[string]any{"pageId": page, "uid": input, "value": value}),
					callLine(fmt.Sprintf("click-%d", i), "click", map[string]any{"pageId": page, "uid": button}),
					callLine(fmt.Sprintf("snap-%d", i), "take_snapshot", map[string]any{"pageId": page}))
				got := byID(e.answers(t, 3))
				if s := got[fmt.Sprintf(`"snap-%d"`, i)].text(); !strings.Contains(s, "echo:"+value) {
					t.Fatalf("round %d: the snapshot does not show the click's echo:%s:\n%s", i, value, s)
				}
			}
		})
	}
}

// TestBurstSelection pipelines select_page and a call without pageId: the
// call must act on the page just selected, in both modes.
func TestBurstSelection(t *testing.T) {
	t.Parallel()
	for _, mode := range []pagelock.Mode{pagelock.Global, pagelock.PerPage} {
		t.Run(mode.String(), func(t *testing.T) {
			e := newRawEnv(t, pagelock.Options{Mode: mode, Timeout: time.Minute, MaxQueue: 64})
			pages := []int{e.openPage(t, "/form.html"), e.openPage(t, "/page2.html")}
			for i := range 20 {
				p := pages[i%2]
				e.send(t,
					callLine(fmt.Sprintf("sel-%d", i), "select_page", map[string]any{"pageId": p}),
					callLine(fmt.Sprintf("eval-%d", i), "evaluate_script", map[string]any{"function": "() => location.pathname"}))
				got := byID(e.answers(t, 2))
				want := map[int]string{pages[0]: "/form.html", pages[1]: "/page2.html"}[p]
				if s := got[fmt.Sprintf(`"eval-%d"`, i)].text(); !strings.Contains(s, want) {
					t.Fatalf("round %d: after select_page %d the call without pageId answered:\n%s\nwant %s", i, p, s, want)
				}
			}
		})
	}
}

// TestExactIDs sends ids that float64 cannot hold and ids that differ only
// in type: each answer carries its id as written, and a cancellation by id
// cancels only the call with that very id, which then gets no answer.
func TestExactIDs(t *testing.T) {
	t.Parallel()
	e := newRawEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64})
	a, b := e.openPage(t, "/form.html"), e.openPage(t, "/page2.html")
	e.send(t,
		callLine(json.Number("9007199254740993"), "evaluate_script", map[string]any{"pageId": a, "function": "() => 1"}),
		`{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{"name":"evaluate_script","arguments":{"pageId":`+fmt.Sprint(a)+`,"function":"() => 2"}}}`,
		callLine(json.Number("9007199254740992"), "evaluate_script", map[string]any{"pageId": a, "function": "() => 3"}))
	got := byID(e.answers(t, 3))
	for id, want := range map[string]string{"9007199254740993": "1", "1e400": "2", "9007199254740992": "3"} {
		if s := got[id].text(); !strings.Contains(s, "```json\n"+want+"\n```") {
			t.Errorf("id %s: answer %q (all: %v)", id, s, got)
		}
	}

	// 7 waits a long time on page a; "7" waits behind a slow call on page b.
	e.send(t,
		callLine(7, "evaluate_script", map[string]any{"pageId": a, "function": "() => new Promise(r => setTimeout(() => r('seven'), 1500))"}),
		callLine("slow-b", "evaluate_script", map[string]any{"pageId": b, "function": "() => new Promise(r => setTimeout(() => r('b'), 1500))"}),
		callLine("7", "evaluate_script", map[string]any{"pageId": b, "function": "() => 'string seven'"}),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"7","reason":"test"}}`)
	// The cancelled "7" gets no answer (MCP); the other two do.
	got = byID(e.answers(t, 2))
	if s := got["7"].text(); !strings.Contains(s, "seven") || strings.Contains(s, "cancel") {
		t.Errorf("number id 7 was hit by the cancellation of \"7\": %s", s)
	}
	if a, ok := got[`"7"`]; ok {
		t.Errorf("the cancelled string id \"7\" was answered: %s", a.text())
	}
	if _, ok := got[`"slow-b"`]; !ok {
		t.Errorf("no answer for slow-b: %v", got)
	}
}

// TestToolTimeout runs a script that never ends: past --tool-timeout the call
// fails naming the tool and its limit, the script is terminated, the lock
// is free at once for the call queued behind it, and the page works again.
func TestToolTimeout(t *testing.T) {
	t.Parallel()
	for _, mode := range []pagelock.Mode{pagelock.Global, pagelock.PerPage} {
		t.Run(mode.String(), func(t *testing.T) {
			e := leaseEnv(t, pagelock.Options{Mode: mode, Timeout: time.Minute}, Options{ToolTimeout: 3 * time.Second})
			page, other := e.openPageUnbounded(t, "/form.html"), e.openPageUnbounded(t, "/page2.html")
			spin := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": page, "function": "() => { while (true) {} }"})
			e.waitHeld(t, pagelock.PageKey(page))
			behind := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": other, "function": "() => 'behind'"})
			r := must(t, <-spin)
			if !r.isError {
				t.Fatalf("an endless script succeeded: %s", r.text)
			}
			mustContain(t, r.text, "evaluate_script ran past its 3s limit (--tool-timeout)", "terminated", "released")
			if b := must(t, <-behind); b.isError || !strings.Contains(b.text, "behind") {
				t.Fatalf("the call behind the endless script: %s", b.text)
			}
			if got := e.eval(t, page, "() => 6 * 7"); got != "42" {
				t.Errorf("the page after the timeout answered %s", got)
			}
		})
	}
}

// TestToolTimeoutCapsOwnTimeout: a tool's own timeout argument cannot make a
// call hold its lock longer than --tool-timeout.
func TestToolTimeoutCapsOwnTimeout(t *testing.T) {
	t.Parallel()
	e := leaseEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Options{ToolTimeout: 3 * time.Second})
	page := e.openPageUnbounded(t, "/form.html")
	start := time.Now()
	text := e.fails(t, "wait_for", map[string]any{"pageId": page, "text": []string{"never on this page"}, "timeout": 600000})
	mustContain(t, text, "wait_for ran past its 3s limit")
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("wait_for with a 10 minute timeout took %v under a 3 s --tool-timeout", took)
	}
}

// openPageUnbounded opens a page as openPage does, but through the browser
// itself, outside any --tool-timeout: on a busy machine new_page alone took
// longer than the short limits the timeout tests set (and an endless
// script spins a CPU for as long as the limit).
func (e *testEnv) openPageUnbounded(t *testing.T, path string) int {
	t.Helper()
	p, err := e.b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(t.Context(), testSite.URL+path, time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.b.ClosePage(context.Background(), p) })
	return p.ID
}

// TestHugeBadInput: a 1 MiB URL (500 times the longest error) is refused
// with an error that quotes only a short prefix of it.
func TestHugeBadInput(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	page := e.openPage(t, "/form.html")
	text := e.fails(t, "navigate_page", map[string]any{"pageId": page, "url": "notascheme://" + strings.Repeat("x", 1<<20)})
	if len(text) > 4000 {
		t.Fatalf("the error is %d bytes long", len(text))
	}
	mustContain(t, text, "more bytes of this error cut")
}
