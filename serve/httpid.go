package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go reads a request id into a float64: 9007199254740993 would come
// back as 9007199254740992, and 1e400 would not parse at all, so a client
// could never match its answer. As over stdio, the id is the client's byte
// for byte: an id that would not survive mcp-go is swapped for a string of
// pagemux's on the way in and back on the way out.

// idSwaps are the ids swapped for requests still in flight, by session and
// the client's id, so that a notifications/cancelled naming the client's id
// reaches the request under its token.
type idSwaps struct {
	mu sync.Mutex
	m  map[string][]byte // session + "\x00" + the client's id → token
}

// swap returns body, decoded as m (nil if it is not one JSON object), with
// its id swapped for a unique string token when mcp-go would not keep that
// id, the writer that swaps it back, and done, to call once the request is
// answered. A notifications/cancelled for such a request gets its token.
// Anything else is returned as it is.
func (x *idSwaps) swap(session string, m map[string]json.RawMessage, body []byte, w http.ResponseWriter) ([]byte, http.ResponseWriter, func()) {
	if id, ok := m["id"]; ok {
		return x.swapRequest(session, m, body, id, w)
	}
	if isMethod(m, mcp.MethodNotificationCancelled) {
		return x.swapCancel(session, m, body), w, func() {}
	}
	return body, w, func() {}
}

func (x *idSwaps) swapRequest(session string, m map[string]json.RawMessage, body, id []byte, w http.ResponseWriter) ([]byte, http.ResponseWriter, func()) {
	id = bytes.TrimSpace(id)
	if !validID(id) || survives(id) {
		return body, w, func() {}
	}
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	token := []byte(`"pagemux-id-` + hex.EncodeToString(nonce) + `"`)
	m["id"] = token
	swapped, err := json.Marshal(m)
	if err != nil {
		return body, w, func() {}
	}
	key := session + "\x00" + string(id)
	x.mu.Lock()
	if x.m == nil {
		x.m = map[string][]byte{}
	}
	x.m[key] = token
	x.mu.Unlock()
	done := func() {
		x.mu.Lock()
		delete(x.m, key)
		x.mu.Unlock()
	}
	return swapped, &idWriter{ResponseWriter: w, token: token, id: id}, done
}

func (x *idSwaps) swapCancel(session string, m map[string]json.RawMessage, body []byte) []byte {
	var params map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil {
		return body
	}
	x.mu.Lock()
	token, ok := x.m[session+"\x00"+string(bytes.TrimSpace(params["requestId"]))]
	x.mu.Unlock()
	if !ok {
		return body
	}
	params["requestId"] = token
	m["params"], _ = json.Marshal(params)
	swapped, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return swapped
}

// survives reports whether mcp-go answers with id exactly as sent: a
// string, or an integer a float64 holds.
func survives(id json.RawMessage) bool {
	if id[0] == '"' {
		return true
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil && n >= -1<<53 && n <= 1<<53 && strconv.FormatInt(n, 10) == string(id)
}

// idWriter puts the client's id back where the token is. mcp-go writes
// each message (a JSON body, an event of a stream) in one Write.
type idWriter struct {
	http.ResponseWriter
	token, id []byte
}

func (w *idWriter) Write(b []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(bytes.ReplaceAll(b, w.token, w.id)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Flush lets event streams through as they come.
func (w *idWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap serves http.ResponseController.
func (w *idWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
