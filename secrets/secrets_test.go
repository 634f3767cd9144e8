package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

const file = `# the test site's accounts
export ADMIN_PASSWORD='p@ss w0rd$HOME'
API_TOKEN="tok\"en-123\n"   # a comment
USER_PIN=12345 # trailing comment
`

func mustParse(t testing.TB, text string) *Set {
	t.Helper()
	s, err := Parse(strings.NewReader(text), "test.env")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParse(t *testing.T) {
	s := mustParse(t, file)
	want := map[string]string{"ADMIN_PASSWORD": "p@ss w0rd$HOME", "API_TOKEN": "tok\"en-123\n", "USER_PIN": "12345"}
	if len(s.values) != len(want) {
		t.Fatalf("got %d secrets, want %d", len(s.values), len(want))
	}
	for k, v := range want {
		if s.values[k] != v {
			t.Errorf("%s = %q, want %q", k, s.values[k], v)
		}
	}
	if got := strings.Join(s.Names(), ","); got != "ADMIN_PASSWORD,API_TOKEN,USER_PIN" {
		t.Errorf("Names() = %s", got)
	}
}

// TestParseErrors: each fault names the line and never the value.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"hunter2secret\n", "test.env:1: want NAME=value"},
		{"OK=abcd\n9BAD=hunter2secret\n", "test.env:2: want NAME=value"},
		{"A='hunter2secret\n", "test.env:1 (A): the single quote is not closed"},
		{`A="hunter2secret` + "\n", "test.env:1 (A): the double quote is not closed"},
		{"A='hunter2secret' x\n", "test.env:1 (A): text after the closing quote"},
		{"A=abc\n", "at least 4 characters"},
		{"A=hunter2secret\nA=hunter2secret\n", "test.env:2: A is given twice"},
	} {
		_, err := Parse(strings.NewReader(tc.text), "test.env")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.text, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Parse(%q)'s error shows the value: %v", tc.text, err)
		}
	}
}

func TestExpand(t *testing.T) {
	s := mustParse(t, file)
	for _, tc := range []struct {
		in   string
		bare bool
		want string
	}{
		{"${ADMIN_PASSWORD}", false, "p@ss w0rd$HOME"},
		{"pin: ${USER_PIN}!", false, "pin: 12345!"},
		{"USER_PIN", true, "12345"},
		{"USER_PIN", false, "USER_PIN"},
		{"$${USER_PIN} is how you write it", false, "${USER_PIN} is how you write it"},
		{"no reference", true, "no reference"},
	} {
		got, err := s.Expand(tc.in, tc.bare)
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q, %v) = %q, %v; want %q", tc.in, tc.bare, got, err, tc.want)
		}
	}
	_, err := s.Expand("${OTHER_AGENTS_TOKEN}", false)
	if err == nil || !strings.Contains(err.Error(), `no secret "OTHER_AGENTS_TOKEN"`) || !strings.Contains(err.Error(), "ADMIN_PASSWORD, API_TOKEN, USER_PIN") {
		t.Errorf("an unknown name: %v", err)
	}
	var none *Set
	if got, err := none.Expand("${X}", true); got != "${X}" || err != nil {
		t.Errorf("no secrets: Expand = %q, %v; want the text as it is", got, err)
	}
}

func TestMask(t *testing.T) {
	s := mustParse(t, file)
	other := mustParse(t, "B_KEY=another-agents-key\n")
	m := NewMasker(s, other)
	pw := "p@ss w0rd$HOME"
	for _, in := range []string{
		"typed " + pw + " into the box",
		"GET /login?pw=" + url.QueryEscape(pw),
		"/u/" + url.PathEscape(pw),
		`{"value":"tok\"en-123\n"}`,
		"<b>p@ss w0rd$HOME</b>",
		"btoa: " + base64.StdEncoding.EncodeToString([]byte(pw)),
		"the other's another-agents-key",
	} {
		got := m.Mask(in)
		for _, leak := range []string{pw, "tok", "another-agents-key", url.QueryEscape(pw)} {
			if strings.Contains(got, leak) {
				t.Errorf("Mask(%q) = %q: shows %q", in, got, leak)
			}
		}
		if !strings.Contains(got, "${") {
			t.Errorf("Mask(%q) = %q: no ${NAME}", in, got)
		}
	}
	// A page that echoes each key shows the prefixes; short ones stay.
	if got := m.Mask("p@ss w0 | p@ss w0rd$H | p@ss"); got != "${ADMIN_PASSWORD} | ${ADMIN_PASSWORD} | p@ss" {
		t.Errorf("prefixes: Mask = %q", got)
	}
	if got := NewMasker(mustParse(t, "X=héllo-wörld\n")).Mask("x-echo: " + latin1("héllo-wörld")); got != "x-echo: ${X}" {
		t.Errorf("a header's Latin-1 reading: Mask = %q", got)
	}
	if got := m.Mask("pin 12345"); got != "pin ${USER_PIN}" {
		t.Errorf("Mask = %q", got)
	}
	if NewMasker(nil, &Set{}) != nil {
		t.Error("a masker of no secrets should be nil")
	}
	var nilMasker *Masker
	if nilMasker.Mask("x") != "x" {
		t.Error("a nil masker should change nothing")
	}
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "12345"...)
	if !bytes.Equal(m.MaskBytes(png), png) {
		t.Error("MaskBytes changed a binary")
	}
	if got := string(m.MaskBytes([]byte(`{"pin":"12345"}`))); got != `{"pin":"${USER_PIN}"}` {
		t.Errorf("MaskBytes(json) = %s", got)
	}
}

func TestHandler(t *testing.T) {
	s := mustParse(t, file)
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil), NewMasker(s))).With("pin", "12345")
	log.Info("typed 12345", "err", errors.New("bad p@ss w0rd$HOME"), slog.Group("g", "v", "x 12345"), "n", 3, "list", []string{"a", "b"})
	out := buf.String()
	if strings.Contains(out, "12345") || strings.Contains(out, "w0rd") {
		t.Errorf("the log shows a secret: %s", out)
	}
	if !strings.Contains(out, `"n":3`) || !strings.Contains(out, "${USER_PIN}") || !strings.Contains(out, `"list":["a","b"]`) {
		t.Errorf("the log lost its attributes: %s", out)
	}
}

// BenchmarkMask: the cost every answer pays with secrets on: a 100 KB
// snapshot-like text, ten secrets of 24 characters (with their prefixes
// and spellings, 1,900 strings to hide), one of them in the text.
func BenchmarkMask(b *testing.B) {
	var env strings.Builder
	for i := range 10 {
		fmt.Fprintf(&env, "SECRET_%d=s3cr3t-%02d-abcdefghijklmnop\n", i, i)
	}
	m := NewMasker(mustParse(b, env.String()))
	var text strings.Builder
	for i := 0; text.Len() < 100<<10; i++ {
		fmt.Fprintf(&text, "  uid=1_%d textbox \"Field %d\" value=\"some typed text %d\"\n", i, i, i)
	}
	page := text.String() + `uid=1_9999 textbox "Password" value="s3cr3t-07-abcdefghijklmnop"` + "\n"
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if !strings.Contains(m.Mask(page), "${SECRET_7}") {
			b.Fatal("not masked")
		}
	}
}
