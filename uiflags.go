package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/pagemux/pagemux/serve"
	"github.com/pagemux/pagemux/tools"
	"github.com/pagemux/pagemux/ui"
)

// uiConfig is where the live view (package ui) is served besides /ui on
// the --http listener.
type uiConfig struct {
	addr string
}

// addUIFlags registers --ui on fs.
func addUIFlags(fs *flag.FlagSet, c *uiConfig) {
	fs.StringVar(&c.addr, "ui", "", "serve the live view (agents, pages with thumbnails, lock queues, a timeline of calls) at http://`ADDR`/ui, loopback only, without tokens: for a pagemux on stdio; with --http it is at /ui there too, for --admin-token tokens")
}

// check validates --ui once parsed.
func (c *uiConfig) check() error {
	if c.addr == "" {
		return nil
	}
	return serve.CheckUIAddr(c.addr)
}

// liveView is a run's live view; nil when neither --http nor --ui asks
// for one, and then its methods do nothing.
type liveView struct{ view *ui.View }

// open makes the live view when there is a place to serve it (--http, or
// --ui, whose listener it starts now), until ctx ends; etcd names this
// replica in it, and records (nil: none) are the session records it
// serves at /ui/records/.
func (c *uiConfig) open(ctx context.Context, log *slog.Logger, httpOn, etcd bool, records http.Handler) *liveView {
	if c.addr == "" && !httpOn {
		return nil
	}
	opts := ui.Options{Log: log, Records: records}
	if etcd {
		host, _ := os.Hostname()
		opts.Replica = fmt.Sprintf("%s:%d", host, os.Getpid()) // as cluster.Options.Process names it
	}
	l := &liveView{view: ui.New(opts)}
	context.AfterFunc(ctx, l.view.Close)
	if c.addr != "" {
		go func() {
			if err := serve.ListenUI(ctx, c.addr, l.view, log); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("live view listener", "addr", c.addr, "error", err)
			}
		}()
	}
	return l
}

// observers are what tools.Options.Observers gets from the live view.
func (l *liveView) observers() []tools.Observer {
	if l == nil {
		return nil
	}
	return []tools.Observer{l.view}
}

// attach gives the live view its server and returns its handler for
// serve.HTTPOptions.UI (nil without a live view).
func (l *liveView) attach(srv *tools.Server) http.Handler {
	if l == nil {
		return nil
	}
	l.view.Attach(srv)
	return l.view
}
