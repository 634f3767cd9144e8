// Package storagestate is the file format of a logged-in browser: its
// cookies and each origin's localStorage, as Playwright's
// context.storageState({path}) writes it. pagemux smoke --storage-state
// reads it; the storage_state and set_storage_state tools write and read
// it. It parses strictly, with errors that name the entry and never a
// value, and writes what it parses. It does not talk to Chrome: it turns
// its cookies into the parameters of Storage.setCookies, and Chrome's
// cookies into its own.
package storagestate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
)

// State is a logged-in browser's cookies and localStorage. Its values are
// secrets: nothing here prints them.
type State struct {
	Cookies []Cookie `json:"cookies"`
	Origins []Origin `json:"origins"`
}

// Cookie is one cookie, scoped by Domain and Path as Set-Cookie scopes it:
// a Domain with a leading dot covers the subdomains too.
type Cookie struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Domain string `json:"domain"`
	Path   string `json:"path"`
	// Expires is seconds since the epoch; -1 (or 0) is a session cookie.
	Expires  float64 `json:"expires"`
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
	// SameSite is Strict, Lax or None; empty leaves it to Chrome.
	SameSite string `json:"sameSite"`
}

// Origin is the localStorage of one origin.
type Origin struct {
	Origin       string `json:"origin"`
	LocalStorage []Item `json:"localStorage"`
}

// Item is one localStorage item.
type Item struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Help ends a bad file's error: what the file should be.
const Help = `give the JSON Playwright's context.storageState({path}) writes: {"cookies": [{"name", "value", "domain", "path", …}], "origins": [{"origin", "localStorage": [{"name", "value"}]}]}`

// SameSites are the values a cookie's sameSite may take.
var SameSites = []string{"Strict", "Lax", "None"}

// Read reads and checks the file at path (see Parse). Its errors name the
// file.
func Read(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	st, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// Parse checks a storage state file's contents and returns it with each
// origin in its canonical form (scheme://host[:port]). Its errors say
// where the file is wrong (the line, or the entry and the cookie or item
// name, never a value) and end with Help. A file with no cookies and no
// origins is refused: it is not a storage state by mistake more often
// than by intent.
func Parse(b []byte) (*State, error) {
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, bad("%s", jsonProblem(b, err))
	}
	if len(st.Cookies) == 0 && len(st.Origins) == 0 {
		return nil, bad("no cookies and no origins in it")
	}
	for i, c := range st.Cookies {
		if err := c.Check(); err != nil {
			where := fmt.Sprintf("cookies[%d]", i)
			if c.Name != "" {
				where += " (" + c.Name + ")"
			}
			return nil, bad("%s %v", where, err)
		}
	}
	for i, o := range st.Origins {
		origin, ok := CanonicalOrigin(o.Origin)
		if !ok {
			return nil, bad("origins[%d]: %q is not an origin: want scheme://host[:port], such as https://app.example.com", i, o.Origin)
		}
		st.Origins[i].Origin = origin
		for j, it := range o.LocalStorage {
			if it.Name == "" {
				return nil, bad("origins[%d] (%s): localStorage[%d] has no name", i, origin, j)
			}
		}
	}
	return &st, nil
}

// bad is an error of Parse: the problem, then Help.
func bad(format string, args ...any) error {
	return fmt.Errorf("%s; %s", fmt.Sprintf(format, args...), Help)
}

// jsonProblem says where a file that does not decode is wrong.
func jsonProblem(b []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("not JSON at line %d (%v)", lineOf(b, se.Offset), se)
	case errors.As(err, &te):
		return fmt.Sprintf("%s at line %d is a JSON %s, want %s", cmp.Or(te.Field, "the file"), lineOf(b, te.Offset), te.Value, jsonKind(te.Type))
	}
	return err.Error()
}

// jsonKind names what JSON a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array"
	}
	return "an object"
}

// lineOf is the line of byte offset off in b, from 1.
func lineOf(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// Check says what is wrong with a cookie, naming no value, as a predicate
// that follows the cookie's name ("has no domain"): a missing name or
// domain, a path not from the root, a sameSite Chrome does not know, a
// sameSite None that is not secure (Chrome refuses it), an expiry that is
// not a time.
func (c Cookie) Check() error {
	switch {
	case c.Name == "":
		return errors.New("has no name")
	case c.Domain == "":
		return errors.New("has no domain")
	case c.Path != "" && !strings.HasPrefix(c.Path, "/"):
		return fmt.Errorf("has path %q, which does not start with /", c.Path)
	case c.SameSite != "" && !slices.Contains(SameSites, c.SameSite):
		return fmt.Errorf("has sameSite %q, want Strict, Lax or None", c.SameSite)
	case c.SameSite == "None" && !c.Secure:
		return errors.New("is sameSite None but not secure: sameSite None needs secure: true (Chrome refuses it otherwise)")
	case math.IsNaN(c.Expires) || math.IsInf(c.Expires, 0) || c.Expires < -1:
		return fmt.Errorf("has expires %v: want seconds since 1970, or -1 for a session cookie", c.Expires)
	}
	return nil
}

// CanonicalOrigin returns the origin raw names (scheme://host[:port], an
// http or https one, with nothing after it but a slash), and whether it is
// one.
func CanonicalOrigin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		strings.TrimSuffix(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}

// CookieParams are the cookies as Chrome's Storage.setCookies takes them.
func (st *State) CookieParams() []*network.CookieParam {
	out := make([]*network.CookieParam, 0, len(st.Cookies))
	for _, c := range st.Cookies {
		out = append(out, c.Param())
	}
	return out
}

// Param is the cookie as Chrome's Storage.setCookies takes it.
func (c Cookie) Param() *network.CookieParam {
	p := &network.CookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: cmp.Or(c.Path, "/"), HTTPOnly: c.HTTPOnly, Secure: c.Secure}
	switch c.SameSite {
	case "Strict":
		p.SameSite = network.CookieSameSiteStrict
	case "Lax":
		p.SameSite = network.CookieSameSiteLax
	case "None":
		p.SameSite = network.CookieSameSiteNone
	}
	if c.Expires > 0 {
		p.Expires = cdp.TimeSinceEpoch(c.Expires)
	}
	return p
}

// FromChrome is a cookie of Chrome's (Storage.getCookies) as the file
// keeps it. Chrome's sameSite, when it has none, is left empty.
func FromChrome(c *network.Cookie) Cookie {
	out := Cookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Expires: c.Expires,
		HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: string(c.SameSite)}
	if c.Session || out.Expires <= 0 {
		out.Expires = -1
	}
	return out
}

// Marshal writes the state as Playwright does: indented JSON, with empty
// lists rather than null.
func (st *State) Marshal() []byte {
	out := State{Cookies: slices.Clip(st.Cookies), Origins: slices.Clone(st.Origins)}
	if out.Cookies == nil {
		out.Cookies = []Cookie{}
	}
	if out.Origins == nil {
		out.Origins = []Origin{}
	}
	for i, o := range out.Origins {
		if o.LocalStorage == nil {
			out.Origins[i].LocalStorage = []Item{}
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		panic(err) // strings, numbers and booleans always encode
	}
	return b
}

// LocalStorageScript is an init script that puts each origin's items in
// localStorage as a document of that origin begins, before its own
// scripts (other items untouched); "" when the state has none.
func (st *State) LocalStorageScript() string {
	items := map[string][][2]string{}
	for _, o := range st.Origins {
		for _, it := range o.LocalStorage {
			items[o.Origin] = append(items[o.Origin], [2]string{it.Name, it.Value})
		}
	}
	if len(items) == 0 {
		return ""
	}
	b, _ := json.Marshal(items)
	return `(() => {
  const items = (` + string(b) + `)[location.origin];
  if (!items) return;
  try { for (const [k, v] of items) localStorage.setItem(k, v); } catch (e) {}
})();`
}
