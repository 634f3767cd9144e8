package smoke

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
)

// StorageState is a logged-in browser's cookies and localStorage, in the
// file Playwright's storageState() writes (and --storage-state reads), so a
// run can start where a login left off. Its values are never printed.
type StorageState struct {
	Cookies []StateCookie `json:"cookies"`
	Origins []StateOrigin `json:"origins"`
}

// StateCookie is one cookie, scoped by Domain and Path as Set-Cookie
// scopes it: a Domain with a leading dot covers the subdomains too.
type StateCookie struct {
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

// StateOrigin is the localStorage of one origin.
type StateOrigin struct {
	Origin       string      `json:"origin"`
	LocalStorage []StateItem `json:"localStorage"`
}

// StateItem is one localStorage item.
type StateItem struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// stateHelp ends a bad file's error: what the file should be.
const stateHelp = `give the JSON Playwright's context.storageState({path}) writes: {"cookies": [{"name", "value", "domain", "path", …}], "origins": [{"origin", "localStorage": [{"name", "value"}]}]}`

// readStorageState reads and checks a --storage-state file. Its errors name
// the file, the entry and the cookie or item name, never a value.
func readStorageState(path string) (*StorageState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--storage-state: %w", err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("--storage-state %s: %s; %s", path, fmt.Sprintf(format, args...), stateHelp)
	}
	var st StorageState
	if err := json.Unmarshal(b, &st); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, bad("not JSON at line %d (%v)", lineOf(b, se.Offset), se)
		case errors.As(err, &te):
			return nil, bad("%s at line %d is a JSON %s, want a %s", te.Field, lineOf(b, te.Offset), te.Value, te.Type)
		}
		return nil, bad("%v", err)
	}
	if len(st.Cookies) == 0 && len(st.Origins) == 0 {
		return nil, bad("no cookies and no origins in it")
	}
	for i, c := range st.Cookies {
		where := fmt.Sprintf("cookies[%d]", i)
		if c.Name != "" {
			where += " (" + c.Name + ")"
		}
		switch {
		case c.Name == "":
			return nil, bad("%s has no name", where)
		case c.Domain == "":
			return nil, bad("%s has no domain", where)
		case c.Path != "" && !strings.HasPrefix(c.Path, "/"):
			return nil, bad("%s: path %q does not start with /", where, c.Path)
		case c.SameSite != "" && !slices.Contains([]string{"Strict", "Lax", "None"}, c.SameSite):
			return nil, bad("%s: sameSite %q, want Strict, Lax or None", where, c.SameSite)
		case c.SameSite == "None" && !c.Secure:
			return nil, bad("%s: sameSite None needs secure: true (Chrome refuses it otherwise)", where)
		}
	}
	for i, o := range st.Origins {
		u, err := url.Parse(o.Origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.TrimSuffix(u.Path, "/") != "" {
			return nil, bad("origins[%d]: %q is not an origin: want scheme://host[:port], such as https://app.example.com", i, o.Origin)
		}
		st.Origins[i].Origin = u.Scheme + "://" + u.Host
		for j, it := range o.LocalStorage {
			if it.Name == "" {
				return nil, bad("origins[%d] (%s): localStorage[%d] has no name", i, o.Origin, j)
			}
		}
	}
	return &st, nil
}

// lineOf is the line of byte offset off in b, from 1.
func lineOf(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// cookieParams are the cookies as Chrome's Storage.setCookies takes them.
func (st *StorageState) cookieParams() []*network.CookieParam {
	var out []*network.CookieParam
	for _, c := range st.Cookies {
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
		out = append(out, p)
	}
	return out
}

// localStorageScript is the init script that puts each origin's items in
// localStorage as a document of that origin begins, before its own scripts:
// every page checked starts with the file's items (other items untouched).
// "" when the file has none.
func (st *StorageState) localStorageScript() string {
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
