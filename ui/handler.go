package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
)

//go:embed static
var static embed.FS

// ServeHTTP serves the live view under /ui: the page (/ui), its script and
// style, the push stream (/ui/events), one state as JSON (/ui/state), the
// pages' thumbnails (/ui/thumb/ID) and the records' slot (/ui/records/).
// It serves GET and HEAD only, and checks no one's rights: see the
// package doc.
func (v *View) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the live view is read with GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	path := strings.TrimPrefix(r.URL.Path, "/ui")
	switch {
	case path == "" || path == "/":
		v.serveStatic(w, r, "index.html", "text/html; charset=utf-8")
	case path == "/app.js":
		v.serveStatic(w, r, "app.js", "text/javascript; charset=utf-8")
	case path == "/style.css":
		v.serveStatic(w, r, "style.css", "text/css; charset=utf-8")
	case path == "/events":
		v.serveEvents(w, r)
	case path == "/state":
		v.serveState(w, r)
	case strings.HasPrefix(path, "/thumb/"):
		v.serveThumb(w, strings.TrimPrefix(path, "/thumb/"))
	case path == "/records" || strings.HasPrefix(path, "/records/"):
		v.serveRecords(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serveStatic serves one embedded file.
func (v *View) serveStatic(w http.ResponseWriter, r *http.Request, name, typ string) {
	b, err := fs.ReadFile(static, "static/"+name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", typ)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// serveState answers the state now as one JSON object, as a push carries
// it, for scripts and curl.
func (v *View) serveState(w http.ResponseWriter, r *http.Request) {
	st := v.build(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, st)
}

// serveThumb answers a page's latest thumbnail, 404 when it has none (no
// one looks, or it has not painted yet).
func (v *View) serveThumb(w http.ResponseWriter, id string) {
	n, err := strconv.Atoi(id)
	jpeg := []byte(nil)
	if err == nil {
		jpeg = v.thumbnail(n)
	}
	if jpeg == nil {
		http.Error(w, "no thumbnail of this page now: thumbnails are taken while /ui/events is open", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(jpeg)
}

// serveRecords hands /ui/records/ to Options.Records, or says how to get
// records.
func (v *View) serveRecords(w http.ResponseWriter, r *http.Request) {
	if v.opts.Records == nil {
		http.Error(w, "no session records: start pagemux with --record DIR to keep them", http.StatusNotFound)
		return
	}
	v.opts.Records.ServeHTTP(w, r)
}
