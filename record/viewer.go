package record

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/snapshot"
)

//go:embed static
var static embed.FS

// Viewer serves the records of a directory for replay: a page that lists
// them and steps through one (index.html, its script and style), and what
// it reads:
//
//	GET api/records                the records the caller may see (Meta, newest first)
//	GET api/records/ID             one record (Record)
//	GET api/records/ID/diff/N      what changed in step N's snapshot since the page's last one (text)
//	GET files/ID/NAME              a step's snapshot (NAME.txt) or screenshot (NAME.jpg)
//
// Paths are relative to where it is mounted: the live view (package ui)
// hands it /ui/records/ with the prefix cut (Handler). It authenticates no
// one: its mount does; what each caller may see is Sees'.
type Viewer struct {
	// Dir holds the records (Options.Dir).
	Dir string
}

// MountPath is where the live view serves the records: Handler's prefix.
const MountPath = "/ui/records"

// Handler is the Viewer of dir with MountPath cut from its requests' paths,
// for ui.Options.Records.
func Handler(dir string) http.Handler {
	v := http.StripPrefix(MountPath, &Viewer{Dir: dir})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MountPath {
			// The page's relative links need the slash.
			http.Redirect(w, r, MountPath+"/", http.StatusMovedPermanently)
			return
		}
		v.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the page, the records' JSON and their files.
func (v *Viewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "records are read with GET", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && (parts[0] == "" || parts[0] == "index.html"):
		v.static(w, r, "index.html")
	case len(parts) == 1 && (parts[0] == "app.js" || parts[0] == "app.css"):
		v.static(w, r, parts[0])
	case len(parts) == 2 && parts[0] == "api" && parts[1] == "records":
		v.list(w, r)
	case len(parts) == 3 && parts[0] == "api" && parts[1] == "records":
		v.record(w, r, parts[2])
	case len(parts) == 5 && parts[0] == "api" && parts[1] == "records" && parts[3] == "diff":
		v.diff(w, r, parts[2], parts[4])
	case len(parts) == 3 && parts[0] == "files":
		v.file(w, r, parts[1], parts[2])
	default:
		http.NotFound(w, r)
	}
}

// static serves one of the page's embedded files.
func (v *Viewer) static(w http.ResponseWriter, r *http.Request, name string) {
	b, err := static.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	types := map[string]string{".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	w.Header().Set("Content-Type", types[filepath.Ext(name)])
	_, _ = w.Write(b)
}

// list answers the records the caller may see.
func (v *Viewer) list(w http.ResponseWriter, r *http.Request) {
	all, err := List(v.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		http.Error(w, "cannot read the records: "+err.Error(), http.StatusInternalServerError)
		return
	}
	out := []Meta{}
	for _, m := range all {
		if Sees(r.Context(), m) {
			out = append(out, m)
		}
	}
	writeJSON(w, out)
}

// record answers one record the caller may see.
func (v *Viewer) record(w http.ResponseWriter, r *http.Request, id string) {
	rec, ok := v.open(w, r, id)
	if ok {
		writeJSON(w, rec)
	}
}

// diff answers what changed in step n's snapshot since the last snapshot
// of the same page before it in the record.
func (v *Viewer) diff(w http.ResponseWriter, r *http.Request, id, n string) {
	rec, ok := v.open(w, r, id)
	if !ok {
		return
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 1 || i > len(rec.Steps) || rec.Steps[i-1].Snapshot == "" {
		http.Error(w, "no snapshot at step "+n+" of the record", http.StatusNotFound)
		return
	}
	cur := rec.Steps[i-1]
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	prev := ""
	for j := i - 2; j >= 0 && prev == ""; j-- {
		if s := rec.Steps[j]; s.Page == cur.Page && s.Snapshot != "" {
			prev = s.Snapshot
		}
	}
	if prev == "" {
		_, _ = w.Write([]byte("the first snapshot of this page in the record"))
		return
	}
	_, _ = w.Write([]byte(snapshotDiff(filepath.Join(v.Dir, id), prev, cur.Snapshot)))
}

// snapshotDiff is the diff of two snapshot files of a record's directory,
// or a line that says why there is none.
func snapshotDiff(dir, prevFile, curFile string) string {
	prev, err1 := os.ReadFile(filepath.Join(dir, prevFile))
	cur, err2 := os.ReadFile(filepath.Join(dir, curFile))
	if err := errors.Join(err1, err2); err != nil {
		return "cannot read the snapshots: " + err.Error()
	}
	c, ok := snapshot.Diff(snapshot.ParseTree(string(prev)), snapshot.ParseTree(string(cur)))
	if !ok {
		return "another document than at the page's last snapshot (a navigation): see the whole snapshot"
	}
	return c.Summary() + "\n\n" + c.Text()
}

// file serves a step's snapshot or screenshot.
func (v *Viewer) file(w http.ResponseWriter, r *http.Request, id, name string) {
	if !validFile.MatchString(name) {
		http.NotFound(w, r)
		return
	}
	if !v.sees(w, r, id) {
		return
	}
	types := map[string]string{".txt": "text/plain; charset=utf-8", ".jpg": "image/jpeg"}
	w.Header().Set("Content-Type", types[filepath.Ext(name)])
	http.ServeFile(w, r, filepath.Join(v.Dir, id, name))
}

// open reads record id if the caller may see it, else answers 404 (as for
// no record: another agent's is not told from none).
func (v *Viewer) open(w http.ResponseWriter, r *http.Request, id string) (*Record, bool) {
	if !v.sees(w, r, id) {
		return nil, false
	}
	rec, err := Open(v.Dir, id)
	if err != nil {
		v.refuse(w, r, err)
		return nil, false
	}
	return rec, true
}

// sees reports whether the caller may see record id, reading its
// meta.json alone (a step's file needs no more), and answers when not.
func (v *Viewer) sees(w http.ResponseWriter, r *http.Request, id string) bool {
	if !validID.MatchString(id) {
		v.refuse(w, r, ErrNoRecord)
		return false
	}
	m, err := readMeta(filepath.Join(v.Dir, id))
	if err == nil && Sees(r.Context(), m) {
		return true
	}
	if err == nil {
		err = ErrNoRecord
	}
	v.refuse(w, r, err)
	return false
}

// refuse answers a record the caller may not have: 404 as for none
// (another agent's is not told from none), 500 for one that does not read.
func (v *Viewer) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, ErrNoRecord) && !errors.Is(err, fs.ErrNotExist) {
		http.Error(w, "cannot read the record: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.Error(w, "no such record that you may see; GET api/records lists yours", http.StatusNotFound)
}

// Sees says whether the caller of ctx may see record m. A request with an
// agent (agents.From: its mount authenticated a token) sees every record
// if it is an admin's, else those of its own token only (never another
// token's, nor those of agents without one). A request with none sees
// every record: its mount admits only those who may (the live view's
// admin tokens, a loopback address).
func Sees(ctx context.Context, m Meta) bool {
	a, ok := agents.From(ctx)
	switch {
	case !ok || a.Admin:
		return true
	}
	return a.Token != "" && a.Token == m.Token
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
