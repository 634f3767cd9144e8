package smoke

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Sitemap limits: the sitemaps protocol allows 50,000 URLs and 50 MB
// (uncompressed) a file; an index is followed one level down, as the
// protocol nests no deeper.
const (
	maxSitemapBytes = 50 << 20
	maxSitemapFiles = 100
)

// sitemapDoc is a sitemap (urlset) or a sitemap index (sitemapindex): both
// list <loc>s, of pages or of sitemaps.
type sitemapDoc struct {
	XMLName  xml.Name
	URLs     []string `xml:"url>loc"`
	Sitemaps []string `xml:"sitemap>loc"`
}

// readSitemaps fetches the sitemaps (an index's sitemaps too) and returns
// their page URLs in order, each once. With base set, each page, and each
// sitemap an index names, is on base's scheme and host, its path and query
// kept: a preview deployment's sitemap usually names the production site.
// Errors say which sitemap. header goes with the requests to the origins
// of sitemaps (and base), as the pages' requests get it (--header).
func readSitemaps(ctx context.Context, sitemaps []string, base *url.URL, timeout time.Duration, header http.Header) ([]string, error) {
	client := &http.Client{Timeout: timeout}
	if len(header) > 0 {
		ht := &headerTransport{header: header, origins: map[string]bool{}}
		for _, sm := range sitemaps {
			if u, err := url.Parse(sm); err == nil {
				ht.origins[u.Scheme+"://"+u.Host] = true
			}
		}
		if base != nil {
			ht.origins[base.Scheme+"://"+base.Host] = true
		}
		client.Transport = ht
	}
	var pages []string
	seen := map[string]bool{}
	fetched := 0
	var read func(loc string, nested bool) error
	read = func(loc string, nested bool) error {
		if fetched++; fetched > maxSitemapFiles {
			return fmt.Errorf("sitemap %s: more than %d sitemaps in the index", loc, maxSitemapFiles)
		}
		doc, err := fetchSitemap(ctx, client, loc)
		if err != nil {
			return fmt.Errorf("sitemap %s: %w", loc, err)
		}
		switch {
		case doc.XMLName.Local == "sitemapindex" && nested:
			return fmt.Errorf("sitemap %s: an index inside an index; the sitemaps protocol nests one level", loc)
		case doc.XMLName.Local == "sitemapindex":
			for _, s := range doc.Sitemaps {
				if err := read(resolveLoc(loc, s, base), true); err != nil {
					return err
				}
			}
		case doc.XMLName.Local == "urlset":
			for _, u := range doc.URLs {
				if u = resolveLoc(loc, u, base); u != "" && !seen[u] {
					seen[u] = true
					pages = append(pages, u)
				}
			}
		default:
			return fmt.Errorf("sitemap %s: <%s> is not a sitemap: want <urlset> or <sitemapindex>", loc, doc.XMLName.Local)
		}
		return nil
	}
	for _, s := range sitemaps {
		if err := read(s, false); err != nil {
			return nil, err
		}
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("no page in the sitemap (%s): want <url><loc>…</loc></url> entries", sitemaps[0])
	}
	return pages, nil
}

// fetchSitemap gets and parses one sitemap, gzipped or not.
func fetchSitemap(ctx context.Context, client *http.Client, loc string) (*sitemapDoc, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	body := bufio.NewReader(resp.Body)
	var r io.Reader = body
	if magic, _ := body.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) { // sitemap.xml.gz
		gz, err := gzip.NewReader(body)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		r = gz
	}
	lr := &io.LimitedReader{R: r, N: maxSitemapBytes + 1}
	var doc sitemapDoc
	if err := xml.NewDecoder(lr).Decode(&doc); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("larger than the protocol's %d MB", maxSitemapBytes>>20)
		}
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty: want a <urlset> or <sitemapindex>")
		}
		return nil, fmt.Errorf("not XML a sitemap can be: %v", err)
	}
	return &doc, nil
}

// resolveLoc makes a <loc> absolute against its sitemap's URL and, with
// base, moves it to base's scheme and host. It returns "" for what is not
// an http(s) URL.
func resolveLoc(sitemap, loc string, base *url.URL) string {
	from, err := url.Parse(sitemap)
	if err != nil {
		return ""
	}
	u, err := from.Parse(strings.TrimSpace(loc))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	if base != nil {
		u.Scheme, u.Host, u.User = base.Scheme, base.Host, base.User
	}
	return u.String()
}

// headerTransport adds header to the requests for origins, and to no other.
type headerTransport struct {
	header  http.Header
	origins map[string]bool
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.origins[req.URL.Scheme+"://"+req.URL.Host] {
		req = req.Clone(req.Context())
		for name, vs := range t.header {
			req.Header[name] = vs
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}
