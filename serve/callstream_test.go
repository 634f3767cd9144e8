package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// sseMessages reads the data of each event of an event stream until it
// ends, as JSON objects.
func sseMessages(t *testing.T, resp *http.Response) []map[string]json.RawMessage {
	t.Helper()
	defer resp.Body.Close()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Errorf("an event that is not JSON: %q", data)
			continue
		}
		out = append(out, m)
	}
	return out
}

// TestCallStreamOwnsItsNotifications: in a session (2025-11-25) with its
// GET stream open, each tool call's progress notifications come on the
// call's own POST stream, all of them, in order, and then its answer;
// none on the GET stream or on another call's stream, also with calls of
// the session at once.
func TestCallStreamOwnsItsNotifications(t *testing.T) {
	const n, calls = 50, 4 // n within the 100 a session's channel holds
	ts := httptest.NewServer(NewHTTP(newTestServer().srv, HTTPOptions{}))
	defer ts.Close()
	_, _, hdr := post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	session := hdr.Get("Mcp-Session-Id")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	get, err := http.DefaultClient.Do(req)
	if err != nil || get.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, get.Status)
	}
	onGet := make(chan []map[string]json.RawMessage, 1)
	go func() { onGet <- sseMessages(t, get) }()

	for round := range 3 {
		var wg sync.WaitGroup
		for c := range calls {
			wg.Go(func() {
				token := fmt.Sprintf("r%d-c%d", round, c)
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"progress","arguments":{"n":%d},"_meta":{"progressToken":%q}}}`, token, n, token)
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Session-Id", session)
				req.Header.Set("MCP-Protocol-Version", "2025-11-25")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("call %s answered as %s, want an event stream", token, ct)
				}
				msgs := sseMessages(t, resp)
				if len(msgs) != n+1 {
					t.Errorf("call %s: %d messages on its stream, want %d notifications and its answer", token, len(msgs), n)
					return
				}
				for i, m := range msgs[:n] {
					var p struct {
						Token    string `json:"progressToken"`
						Progress int    `json:"progress"`
					}
					_ = json.Unmarshal(m["params"], &p)
					if p.Token != token || p.Progress != i+1 {
						t.Errorf("call %s: message %d on its stream is %s, want its progress %d", token, i, m["params"], i+1)
						return
					}
				}
				if last := msgs[n]; string(last["id"]) != `"`+token+`"` || last["result"] == nil {
					t.Errorf("call %s: its stream ends with %v, not its answer", token, last)
				}
			})
		}
		wg.Wait()
	}
	ts.CloseClientConnections() // ends the GET stream
	if got := <-onGet; len(got) > 0 {
		t.Errorf("%d messages on the GET stream, want none: %v", len(got), got[0])
	}
}
