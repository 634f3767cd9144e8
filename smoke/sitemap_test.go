package smoke

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// sitemapServer serves sitemaps that name pages on host (the server's own
// when empty).
func sitemapServer(t *testing.T, host string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	var srv *httptest.Server
	on := func() string { return cmp.Or(host, srv.URL) }
	urlset := func(paths ...string) string {
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, p := range paths {
			fmt.Fprintf(&b, "<url>\n  <loc> %s%s </loc><lastmod>2026-11-30</lastmod></url>", on(), p)
		}
		return b.String() + "</urlset>"
	}
	mux.HandleFunc("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, urlset("/clean.html", "/missing.html"))
	})
	mux.HandleFunc("/index.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>%s/a.xml</loc></sitemap><sitemap><loc>/b.xml.gz</loc></sitemap></sitemapindex>`, on())
	})
	mux.HandleFunc("/a.xml", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, urlset("/clean.html")) })
	mux.HandleFunc("/b.xml.gz", func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		gz := gzip.NewWriter(&b)
		fmt.Fprint(gz, urlset("/lighthouse-good.html", "/clean.html"))
		gz.Close()
		w.Write(b.Bytes())
	})
	mux.HandleFunc("/nested.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<sitemapindex><sitemap><loc>/index.xml</loc></sitemap></sitemapindex>`)
	})
	mux.HandleFunc("/html.xml", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `<html><body>hi</body></html>`) })
	mux.HandleFunc("/broken.xml", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `<urlset><url><loc>x</url>`) })
	mux.HandleFunc("/empty.xml", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `<urlset/>`) })
	mux.HandleFunc("/blank.xml", func(w http.ResponseWriter, r *http.Request) {})
	mux.Handle("/", http.FileServer(http.Dir("testdata/site")))
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// Sitemaps are read as the protocol has them: an index's sitemaps in
// order, gzipped or not, each page once; with a base, on its host.
func TestReadSitemaps(t *testing.T) {
	t.Parallel()
	srv := sitemapServer(t, "")
	prod := sitemapServer(t, "https://www.production.test")
	ctx := t.Context()
	got, err := readSitemaps(ctx, []string{srv.URL + "/index.xml", srv.URL + "/sitemap.xml"}, nil, 5*time.Second, nil)
	if want := []string{srv.URL + "/clean.html", srv.URL + "/lighthouse-good.html", srv.URL + "/missing.html"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("index and sitemap: %q, %v; want %q", got, err, want)
	}
	base, _ := url.Parse(srv.URL + "/ignored/path")
	got, err = readSitemaps(ctx, []string{prod.URL + "/sitemap.xml", prod.URL + "/index.xml"}, base, 5*time.Second, nil)
	if want := []string{srv.URL + "/clean.html", srv.URL + "/missing.html", srv.URL + "/lighthouse-good.html"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("production sitemaps on the base: %q, %v; want %q", got, err, want)
	}
	for path, want := range map[string]string{
		"/nope.xml":   "sitemap " + srv.URL + "/nope.xml: HTTP 404 Not Found",
		"/nested.xml": "an index inside an index",
		"/html.xml":   "<html> is not a sitemap",
		"/broken.xml": "not XML a sitemap can be",
		"/empty.xml":  "no page in the sitemap",
		"/blank.xml":  "empty: want a <urlset>",
	} {
		if _, err := readSitemaps(ctx, []string{srv.URL + path}, nil, 5*time.Second, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := readSitemaps(cctx, []string{srv.URL + "/sitemap.xml"}, nil, 5*time.Second, nil); err == nil {
		t.Error("a cancelled read returned no error")
	}
}

// --sitemap checks the sitemap's pages after the URLs given, --max-pages
// keeps the first ones; a sitemap that cannot be read is bad usage.
func TestSmokeSitemap(t *testing.T) {
	t.Parallel()
	srv := sitemapServer(t, "https://www.production.test")
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	o := options(t, "--base-url", srv.URL, "--sitemap", "/sitemap.xml", "--sitemap", "/index.xml", "--max-pages", "2", "--json", jsonPath, "/clean.html")
	code, stdout, stderr := run(t, o, browser.Config{})
	if code != ExitFail {
		t.Fatalf("exit %d, want %d (a page is missing)\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	var urls []string
	for _, p := range readReport(t, jsonPath).Pages {
		urls = append(urls, p.URL)
	}
	if want := []string{srv.URL + "/clean.html", srv.URL + "/missing.html"}; !slices.Equal(urls, want) {
		t.Errorf("pages %q, want %q", urls, want)
	}
	if !strings.Contains(stderr, "Checking the first 2 of 3 pages (--max-pages)") {
		t.Errorf("stderr does not say pages were left out:\n%s", stderr)
	}

	o = options(t, "--sitemap", srv.URL+"/html.xml")
	code, _, stderr = run(t, o, browser.Config{})
	if code != ExitUsage || !strings.Contains(stderr, "<html> is not a sitemap") {
		t.Errorf("a page for a sitemap: exit %d\n%s", code, stderr)
	}
}
