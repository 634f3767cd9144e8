package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
)

// mcp-go reads a request id into a float64: 9007199254740993 would come
// back as 9007199254740992, and 1e400 would not parse at all, so a client
// could never match its answer. As over stdio, the id is the client's byte
// for byte: an id that would not survive mcp-go is swapped for a string of
// pagemux's on the way in and back on the way out.

// swapID returns body with its id swapped for a unique string token when
// mcp-go would not keep that id, and the writer that swaps it back. It
// returns body and w as they are when the id survives, or when body is
// not one JSON object with an id.
func swapID(body []byte, w http.ResponseWriter) ([]byte, http.ResponseWriter) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body, w
	}
	id, ok := m["id"]
	if !ok || !validID(id) || survives(id) {
		return body, w
	}
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	token := []byte(`"pagemux-id-` + hex.EncodeToString(nonce) + `"`)
	m["id"] = token
	swapped, err := json.Marshal(m)
	if err != nil {
		return body, w
	}
	return swapped, &idWriter{ResponseWriter: w, token: token, id: bytes.TrimSpace(id)}
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
