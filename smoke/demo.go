package smoke

import (
	"embed"
	"io/fs"
	"net"
	"net/http"
	"time"
)

// demoFiles is the demo site `pagemux smoke` checks when given no URL: a
// small shop with one page broken on purpose (blog.html: a missing image
// and a script that throws).
//
//go:embed demo
var demoFiles embed.FS

// demoPages are the pages of the demo site a run checks, in order.
var demoPages = []string{"/", "/pricing.html", "/docs.html", "/blog.html"}

// demoSite is the demo site, served on a free loopback port.
type demoSite struct {
	srv    *http.Server
	origin string
	urls   []string
}

func startDemo() (*demoSite, error) {
	root, err := fs.Sub(demoFiles, "demo")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &demoSite{
		srv:    &http.Server{Handler: http.FileServerFS(root), ReadHeaderTimeout: 10 * time.Second},
		origin: "http://" + ln.Addr().String(),
	}
	for _, p := range demoPages {
		d.urls = append(d.urls, d.origin+p)
	}
	go d.srv.Serve(ln)
	return d, nil
}

func (d *demoSite) close() { d.srv.Close() }
