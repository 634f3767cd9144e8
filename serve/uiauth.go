package serve

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
)

// The live view (HTTPOptions.UI) is for admin tokens. A script sends its
// token as for /mcp (Authorization: Bearer); a person's browser cannot, so
// /ui answers it with a form whose secret, once it names an admin token,
// is kept in a cookie that only /ui gets (HttpOnly, SameSite=Strict): the
// secret never goes in a URL, where history and logs would keep it.

// uiCookie is the cookie the login form sets.
const uiCookie = "pagemux_ui"

// uiLoginPath is where the form posts.
const uiLoginPath = "/ui/login"

// serveUI checks that the caller is an admin, then serves the live view.
func (h *httpHandler) serveUI(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == uiLoginPath {
		h.uiLogin(w, r)
		return
	}
	if len(h.opts.Tokens) > 0 {
		token := h.tokenName(r)
		if c, err := r.Cookie(uiCookie); token == "" && err == nil {
			token = h.tokenOf(c.Value)
		}
		switch {
		case token == "":
			uiRefuse(w, r, http.StatusUnauthorized, "")
			return
		case !slices.Contains(h.opts.AdminTokens, token):
			uiRefuse(w, r, http.StatusForbidden, "token "+token+" is not an admin token")
			return
		}
	}
	h.opts.UI.ServeHTTP(w, r)
}

// uiLogin takes the form's secret: an admin token's sets the cookie and
// goes to /ui, another is refused as /ui refuses it.
func (h *httpHandler) uiLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Redirect(w, r, "/ui", http.StatusSeeOther)
		return
	}
	// Another site's form may not log this browser in as anyone.
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host && o != "https://"+r.Host {
		uiRefuse(w, r, http.StatusForbidden, "the login came from another site ("+o+")")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	secret := r.PostFormValue("token")
	token := h.tokenOf(secret)
	switch {
	case len(h.opts.Tokens) == 0:
		http.Redirect(w, r, "/ui", http.StatusSeeOther)
	case token == "":
		uiRefuse(w, r, http.StatusUnauthorized, "that is no token's secret")
	case !slices.Contains(h.opts.AdminTokens, token):
		uiRefuse(w, r, http.StatusForbidden, "token "+token+" is not an admin token")
	default:
		http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: secret, Path: "/ui", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		http.Redirect(w, r, "/ui", http.StatusSeeOther)
	}
}

// uiRefuse answers 401 or 403: a browser gets the login form, with why,
// a script a JSON-RPC error as /mcp's.
func uiRefuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pagemux"`)
	}
	msg := "the live view needs an admin token: send Authorization: Bearer <secret of an --auth-token named by --admin-token>"
	if why != "" {
		msg = why + "; " + msg
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		httpError(w, status, msg)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html><meta charset="utf-8"><title>pagemux live view</title>
<body style="font:15px system-ui;max-width:32em;margin:4em auto">
<h1 style="font-size:1.2em">pagemux live view</h1><p>%s.</p>
<form method="post" action="%s"><label>Secret of an admin token <input name="token" type="password" autofocus></label>
<button>Open</button></form>`, html.EscapeString(msg), uiLoginPath)
}

// ListenUI serves the live view h at http://ADDR/ui, loopback only and to
// loopback Host names only (loopbackHostOnly), without tokens, until ctx
// ends: --ui, for a pagemux on stdio.
func ListenUI(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	if err := CheckUIAddr(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--ui %s: %w", addr, err)
	}
	return serveUI(ctx, ln, h, log)
}

// CheckUIAddr refuses an --ui address that is not a loopback HOST:PORT.
func CheckUIAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--ui %q: want HOST:PORT, such as 127.0.0.1:8932", addr)
	}
	if !loopback(addr) {
		return fmt.Errorf("--ui %s: the live view shows every agent's pages to whoever reaches it; bind loopback, such as --ui 127.0.0.1:8932 (over --http it is at /ui, for admin tokens)", addr)
	}
	return nil
}

// serveUI is ListenUI on a listener of the caller's, which it closes.
func serveUI(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/ui", h)
	mux.Handle("/ui/", h)
	mux.Handle("/{$}", http.RedirectHandler("/ui", http.StatusSeeOther))
	if log != nil {
		log.Info("serving the live view", "url", "http://"+ln.Addr().String()+"/ui")
	}
	return serveLoopback(ctx, ln, mux, "--ui")
}
