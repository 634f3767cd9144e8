package cdppipe

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseAnswerPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		id    int64
		state int
	}{
		{`{"id":12,"result":{}}`, 12, prefixAnswer},
		{`{"id":1073741824,"error":{}}`, 1 << 30, prefixAnswer},
		{`{"id":7}`, 7, prefixAnswer},
		{`{"id":`, 0, prefixMore},
		{`{"id":12`, 0, prefixMore},
		{`{"i`, 0, prefixMore},
		{`{"method":"Page.loadEventFired"`, 0, prefixOther},
		{`{"id":,`, 0, prefixOther},
		{`{"id":"x"}`, 0, prefixOther},
		{`{"id":1234567890123456,`, 0, prefixOther},
	}
	for _, tt := range tests {
		id, state := parseAnswerPrefix([]byte(tt.in))
		if id != tt.id || state != tt.state {
			t.Errorf("parseAnswerPrefix(%s) = %d, %d; want %d, %d", tt.in, id, state, tt.id, tt.state)
		}
	}
}

func TestMessageSession(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"method":"Page.frameNavigated","params":{},"sessionId":"ABC123"}`, "ABC123"},
		{`{"method":"Target.targetCreated","params":{"targetInfo":{}}}`, ""},
		// A sessionId inside params is not the message's.
		{`{"method":"Target.detachedFromTarget","params":{"sessionId":"X"}}`, ""},
		{`{"method":"Target.attachedToTarget","params":{"sessionId":"C","waitingForDebugger":false},"sessionId":"P"}`, "P"},
		// Not last: found the slow way.
		{`{"sessionId":"Q","method":"Runtime.consoleAPICalled","params":{}}`, "Q"},
	}
	for _, tt := range tests {
		if got := messageSession([]byte(tt.in)); got != tt.want {
			t.Errorf("messageSession(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// fakeChrome is the Chrome end of a mux in a unit test: it reads what the
// mux writes and writes what the test gives it.
type fakeChrome struct {
	mux       *Mux
	cdpR      *bufio.Reader // what chromedp reads
	cdpW      *os.File      // what chromedp writes
	chromeR   *bufio.Reader // what Chrome reads
	chromeOut *os.File      // what Chrome writes
}

func newFakeChrome(t *testing.T) *fakeChrome {
	t.Helper()
	return newFakeChromeMax(t, 0)
}

// newFakeChromeMax is newFakeChrome with a mux that takes messages of at
// most limit bytes from Chrome.
func newFakeChromeMax(t *testing.T, limit int) *fakeChrome {
	t.Helper()
	pipe := func() (*os.File, *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	fromCDP, cdpW := pipe()
	cdpR, toCDP := pipe()
	chromeIn, toChrome := pipe()
	fromChrome, chromeOut := pipe()
	m := newMux(slog.New(slog.DiscardHandler), fromCDP, toCDP, toChrome, fromChrome, nil, limit, false)
	t.Cleanup(m.close)
	return &fakeChrome{mux: m, cdpR: bufio.NewReader(cdpR), cdpW: cdpW, chromeR: bufio.NewReader(chromeIn), chromeOut: chromeOut}
}

func (f *fakeChrome) chromeReads(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	b, err := f.chromeR.ReadBytes(0)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b[:len(b)-1], &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

func (f *fakeChrome) chromeSays(t *testing.T, msg string) {
	t.Helper()
	if _, err := f.chromeOut.Write([]byte(msg + "\x00")); err != nil {
		t.Fatal(err)
	}
}

// chromedp's traffic passes unchanged; a client's command gets an id of
// the mux's range and its browser session, and its answer comes back with
// the client's id and without that session; chromedp never sees it.
func TestMuxRoutes(t *testing.T) {
	t.Parallel()
	f := newFakeChrome(t)
	f.cdpW.Write([]byte(`{"id":1,"method":"Browser.getVersion"}` + "\x00"))
	if m := f.chromeReads(t); string(m["id"]) != "1" {
		t.Fatalf("chromedp's command reached chrome as %v", m)
	}
	clientc := make(chan *muxClient)
	go func() {
		c, err := f.mux.newClient(t.Context())
		if err != nil {
			t.Error(err)
		}
		clientc <- c
	}()
	att := f.chromeReads(t)
	if string(att["method"]) != `"Target.attachToBrowserTarget"` {
		t.Fatalf("want an attach, got %v", att)
	}
	f.chromeSays(t, `{"id":`+string(att["id"])+`,"result":{"sessionId":"BS"}}`)
	c := <-clientc
	if c == nil {
		t.FailNow()
	}
	if err := c.Send([]byte(`{"id":1,"method":"Target.getTargets","params":{}}`)); err != nil {
		t.Fatal(err)
	}
	cmd := f.chromeReads(t)
	var id int64
	json.Unmarshal(cmd["id"], &id)
	if id < muxIDBase || string(cmd["sessionId"]) != `"BS"` {
		t.Fatalf("the client's command reached chrome as %v", cmd)
	}
	// chromedp's answer first, then the client's, then an event of each.
	f.chromeSays(t, `{"id":1,"result":{"product":"Chrome"}}`)
	f.chromeSays(t, `{"id":`+string(cmd["id"])+`,"result":{"targetInfos":[]},"sessionId":"BS"}`)
	f.chromeSays(t, `{"method":"Target.targetCreated","params":{},"sessionId":"BS"}`)
	f.chromeSays(t, `{"method":"Target.targetCreated","params":{}}`)
	for _, want := range []string{`{"id":1,"result":{"product":"Chrome"}}`, `{"method":"Target.targetCreated","params":{}}`} {
		got, err := f.cdpR.ReadBytes(0)
		if err != nil || string(got) != want+"\x00" {
			t.Fatalf("chromedp read %q (%v), want %q", got, err, want)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for _, want := range []string{`{"id":1,"result":{"targetInfos":[]}}`, `{"method":"Target.targetCreated","params":{}}`} {
		got, ok := c.Next(ctx)
		if !ok || string(got) != want {
			t.Fatalf("the client read %s (%v), want %s", got, ok, want)
		}
	}
	// A session that is not the client's is refused without reaching Chrome.
	c.Send([]byte(`{"id":2,"sessionId":"CHROMEDPS","method":"Runtime.evaluate","params":{}}`))
	if got, _ := c.Next(ctx); !strings.Contains(string(got), "Session with given id not found") {
		t.Fatalf("another session's command: %s", got)
	}
	// Leaving detaches the browser session.
	c.Close()
	if det := f.chromeReads(t); string(det["method"]) != `"Target.detachFromTarget"` || !strings.Contains(string(det["params"]), `"BS"`) {
		t.Fatalf("want the browser session detached, got %v", det)
	}
}

// A streamed answer reaches its reader in pieces, never whole in the mux,
// and what the reader leaves is read away: the next message still arrives.
func TestMuxStream(t *testing.T) {
	t.Parallel()
	f := newFakeChrome(t)
	big := strings.Repeat("x", 4<<20)
	got := make(chan string, 1)
	go func() {
		err := f.mux.StreamCall(t.Context(), "S", "Accessibility.getFullAXTree", nil, false, func(r io.Reader) error {
			head := make([]byte, 20)
			_, err := io.ReadFull(r, head)
			got <- string(head)
			return err
		})
		if err != nil {
			t.Error(err)
		}
	}()
	cmd := f.chromeReads(t)
	if string(cmd["sessionId"]) != `"S"` {
		t.Fatalf("the command reached chrome as %v", cmd)
	}
	go func() { // one writer: a pipe write this big is not atomic
		f.chromeOut.Write([]byte(`{"id":` + string(cmd["id"]) + `,"result":{"s":"` + big + `"},"sessionId":"S"}` + "\x00"))
		f.chromeOut.Write([]byte(`{"id":3,"result":{}}` + "\x00"))
	}()
	if head := <-got; !strings.HasPrefix(head, `{"id":`) {
		t.Fatalf("the stream began %q", head)
	}
	if b, err := f.cdpR.ReadBytes(0); err != nil || string(b) != `{"id":3,"result":{}}`+"\x00" {
		t.Fatalf("after the stream chromedp read %q, %v", b, err)
	}
}

// cdpReads is the next whole message chromedp reads.
func (f *fakeChrome) cdpReads(t *testing.T) string {
	t.Helper()
	b, err := f.cdpR.ReadBytes(0)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:len(b)-1])
}

// A message from Chrome over the mux's limit never reaches chromedp whole,
// however many reads it spans: an answer becomes an error answer for the
// same id and session, a console message a warning that says what was
// dropped, another event nothing; a message of exactly the limit, and the
// messages after a big one, pass unchanged and in order.
func TestMuxMessageLimit(t *testing.T) {
	t.Parallel()
	const limit = 300 << 10 // more than the reader's buffer
	f := newFakeChromeMax(t, limit)
	pad := func(prefix, suffix string, size int) string {
		return prefix + strings.Repeat("x", size-len(prefix)-len(suffix)) + suffix
	}
	exact := pad(`{"id":3,"result":{"result":{"type":"string","value":"`, `"}},"sessionId":"S1"}`, limit)
	go func() {
		f.chromeSays(t, pad(`{"id":5,"result":{"result":{"type":"string","value":"`, `"}},"sessionId":"S1"}`, 1<<20))
		f.chromeSays(t, exact)
		f.chromeSays(t, pad(`{"method":"Runtime.consoleAPICalled","params":{"type":"log","args":[{"type":"string","value":"`, `"}]},"sessionId":"S2"}`, limit+1))
		f.chromeSays(t, pad(`{"method":"Runtime.exceptionThrown","params":{"text":"`, `"},"sessionId":"S2"}`, 2*limit))
		f.chromeSays(t, pad(`{"id":6,"result":{"v":"`, `"}}`, limit+10))
		f.chromeSays(t, `{"method":"Page.loadEventFired","params":{},"sessionId":"S2"}`)
	}()
	var ans struct {
		ID    int64 `json:"id"`
		Error struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		SessionID string `json:"sessionId"`
	}
	got := f.cdpReads(t)
	if err := json.Unmarshal([]byte(got), &ans); err != nil {
		t.Fatalf("%.300s: %v", got, err)
	}
	if ans.ID != 5 || ans.SessionID != "S1" || ans.Error.Code != tooBigCode || !strings.Contains(ans.Error.Message, "1.0 MiB, over the 300.0 KiB") {
		t.Errorf("a big answer reached chromedp as %.300s", got)
	}
	if got := f.cdpReads(t); got != exact {
		t.Errorf("a message of the limit's size changed on its way (%d bytes, want %d)", len(got), len(exact))
	}
	var ev struct {
		Method string `json:"method"`
		Params struct {
			Type string `json:"type"`
			Args []struct {
				Value string `json:"value"`
			} `json:"args"`
		} `json:"params"`
		SessionID string `json:"sessionId"`
	}
	got = f.cdpReads(t)
	if err := json.Unmarshal([]byte(got), &ev); err != nil {
		t.Fatalf("%.300s: %v", got, err)
	}
	if ev.Method != "Runtime.consoleAPICalled" || ev.SessionID != "S2" || ev.Params.Type != "warning" || len(ev.Params.Args) != 1 ||
		!strings.Contains(ev.Params.Args[0].Value, "dropped a console message of 300.0 KiB") {
		t.Errorf("a big console message reached chromedp as %.300s", got)
	}
	// The exception is dropped; the root session's answer comes next.
	got = f.cdpReads(t)
	ans.SessionID = ""
	if err := json.Unmarshal([]byte(got), &ans); err != nil || ans.ID != 6 || ans.SessionID != "" || ans.Error.Code != tooBigCode {
		t.Errorf("a big answer of the root session reached chromedp as %.300s (%v)", got, err)
	}
	if got := f.cdpReads(t); got != `{"method":"Page.loadEventFired","params":{},"sessionId":"S2"}` {
		t.Errorf("after the big ones chromedp read %.300s", got)
	}
}

func TestSizeText(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1536: "1.5 KiB", 32 << 20: "32.0 MiB"} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
}
