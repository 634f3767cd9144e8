// Package jsonstr writes Go strings as JSON strings.
package jsonstr

import (
	"bytes"
	"encoding/json"
)

// Quote returns s as a JSON string, quotes included, with & < > left as
// they are (as JavaScript's JSON.stringify writes them) unless escapeHTML
// asks for \u0026 \u003c \u003e (as encoding/json's Marshal writes them).
func Quote(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s) // a string always encodes
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
