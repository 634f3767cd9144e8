package storagestate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
)

// TestParseErrors: a bad file's error says where it is wrong and what to
// give, and never shows a value.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, file, want string }{
		{"not JSON", "{\n  \"cookies\": [\n    {\"name\": \"a\" \"value\": \"hunter2\"}\n  ]\n}", "not JSON at line 3"},
		{"wrong type", `{"cookies": {"name": "a"}}`, "cookies at line 1 is a JSON object, want an array"},
		{"expires type", `{"cookies": [{"name": "a", "value": "hunter2", "domain": "a.test", "expires": "soon"}]}`, "want a number"},
		{"empty", `{}`, "no cookies and no origins in it"},
		{"no name", `{"cookies": [{"value": "hunter2", "domain": "example.com"}]}`, "cookies[0] has no name"},
		{"no domain", `{"cookies": [{"name": "sid", "value": "hunter2"}]}`, "cookies[0] (sid) has no domain"},
		{"path", `{"cookies": [{"name": "sid", "value": "hunter2", "domain": "a.test", "path": "app"}]}`, `has path "app", which does not start with /`},
		{"sameSite", `{"cookies": [{"name": "sid", "value": "hunter2", "domain": "a.test", "sameSite": "lax"}]}`, `sameSite "lax", want Strict, Lax or None`},
		{"sameSite None", `{"cookies": [{"name": "sid", "value": "hunter2", "domain": "a.test", "sameSite": "None"}]}`, "needs secure: true"},
		{"expires", `{"cookies": [{"name": "sid", "value": "hunter2", "domain": "a.test", "expires": -5}]}`, "has expires -5: want seconds since 1970"},
		{"origin", `{"origins": [{"origin": "example.com/app", "localStorage": []}]}`, `origins[0]: "example.com/app" is not an origin`},
		{"origin path", `{"origins": [{"origin": "https://a.test/app", "localStorage": []}]}`, `is not an origin`},
		{"item", `{"origins": [{"origin": "https://a.test", "localStorage": [{"value": "hunter2"}]}]}`, "origins[0] (https://a.test): localStorage[0] has no name"},
	} {
		_, err := Parse([]byte(tt.file))
		switch {
		case err == nil:
			t.Errorf("%s: no error", tt.name)
		case !strings.Contains(err.Error(), tt.want):
			t.Errorf("%s: %v\nwant %q", tt.name, err, tt.want)
		case strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the error shows a value: %v", tt.name, err)
		case !strings.HasSuffix(err.Error(), Help):
			t.Errorf("%s: the error does not say what to give: %v", tt.name, err)
		}
	}
}

// TestRoundTrip: what Marshal writes, Parse reads back the same; Chrome's
// cookies become the file's and the file's Chrome's.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	chrome := []*network.Cookie{
		{Name: "sid", Value: "s3cr3t", Domain: "127.0.0.1", Path: "/", Expires: -1, Session: true, HTTPOnly: true, SameSite: network.CookieSameSiteLax},
		{Name: "pref", Value: "dark", Domain: ".a.test", Path: "/app", Expires: 4102444800, Secure: true, SameSite: network.CookieSameSiteNone},
	}
	st := &State{Origins: []Origin{{Origin: "HTTP://127.0.0.1:8080/", LocalStorage: []Item{{"token", "t0k3n"}}}, {Origin: "https://a.test"}}}
	for _, c := range chrome {
		st.Cookies = append(st.Cookies, FromChrome(c))
	}
	b := st.Marshal()
	var raw map[string][]map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if got := raw["origins"][1]["localStorage"]; got == nil {
		t.Errorf("an origin without items has localStorage null, want []:\n%s", b)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse of Marshal's output: %v\n%s", err, b)
	}
	if back.Origins[0].Origin != "http://127.0.0.1:8080" {
		t.Errorf("origin %q, want it canonical: http://127.0.0.1:8080", back.Origins[0].Origin)
	}
	params := back.CookieParams()
	if p := params[0]; p.Name != "sid" || p.Expires != 0 || !p.HTTPOnly || p.SameSite != network.CookieSameSiteLax || p.Path != "/" {
		t.Errorf("session cookie as a parameter: %+v", p)
	}
	if p := params[1]; p.Domain != ".a.test" || p.Path != "/app" || p.Expires != 4102444800 || !p.Secure || p.SameSite != network.CookieSameSiteNone {
		t.Errorf("persistent cookie as a parameter: %+v", p)
	}
	if (&State{}).LocalStorageScript() != "" || !strings.Contains(back.LocalStorageScript(), `"http://127.0.0.1:8080":[["token","t0k3n"]]`) {
		t.Errorf("localStorage script:\n%s", back.LocalStorageScript())
	}
}
