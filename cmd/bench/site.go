package main

import (
	_ "embed"
	"net/http"
	"net/http/httptest"
)

// formHTML is the one page the benchmark drives: a text input, a select and
// a submit button whose handler counts clicks in window.submits (and stays on
// the page, so uids survive between calls).
//
//go:embed form.html
var formHTML []byte

// startSite serves formHTML at /form.html, realDir under /real/ and apgDir
// under /apg/ (either skipped when empty). httptest listens on 127.0.0.1 with
// a free port, so nothing outside this machine can reach it.
func startSite(realDir, apgDir string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/form.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(formHTML)
	})
	mux.HandleFunc("/big.html", serveBigPage) // bigsnap.go
	if realDir != "" {
		mux.Handle("/real/", http.StripPrefix("/real/", http.FileServer(http.Dir(realDir)))) // realsnap.go
	}
	if apgDir != "" {
		mux.Handle("/apg/", http.StripPrefix("/apg/", http.FileServer(http.Dir(apgDir)))) // realsnap.go
	}
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	return httptest.NewServer(mux)
}
