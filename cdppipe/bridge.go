package cdppipe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// Bridge serves a launched Chrome's DevTools protocol to clients
// such as Lighthouse's puppeteer, on 127.0.0.1 and at one path:
// /devtools/browser/ID, ID 128 random bits, new for each launch. It serves
// nothing else (no /json endpoints: 404), and it refuses (403) every
// upgrade that carries an Origin header: browsers always send one, so no
// page can connect, even one told the whole URL; DevTools clients outside a
// browser (Node's ws, chromedp) send none. Each connection is a Mux
// client with a browser session of its own. StartBridge starts one.
type Bridge struct {
	mux  *Mux
	log  *slog.Logger
	ln   net.Listener
	srv  *http.Server
	addr string // 127.0.0.1:PORT
	path string
	url  string
}

// StartBridge serves m to DevTools clients on a new port of 127.0.0.1, at
// a new unguessable path, and logs through m's logger. The bridge stops
// when Chrome's pipe closes; StartBridge fails when it is closed already.
// It does not stop a bridge started before on the same mux: call it once.
func StartBridge(m *Mux) (*Bridge, error) {
	select {
	case <-m.done:
		return nil, errors.New("devtools endpoint: chrome went away; try again")
	default:
	}
	log := m.log
	var id [16]byte
	rand.Read(id[:])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	br := &Bridge{mux: m, log: log, ln: ln, addr: ln.Addr().String(), path: "/devtools/browser/" + hex.EncodeToString(id[:])}
	br.url = "ws://" + br.addr + br.path
	br.srv = &http.Server{Handler: br, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go br.srv.Serve(ln)
	go func() {
		<-m.done
		br.srv.Close()
	}()
	return br, nil
}

// URL is the address a DevTools client connects to:
// ws://127.0.0.1:PORT/devtools/browser/ID.
func (br *Bridge) URL() string { return br.url }

// Addr is the host:port the bridge listens on, 127.0.0.1:PORT.
func (br *Bridge) Addr() string { return br.addr }

// ServeHTTP accepts the websocket of a DevTools client.
func (br *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != br.path {
		http.NotFound(w, r)
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		br.log.Warn("devtools bridge: refused a connection from a web page", "origin", o)
		http.Error(w, "devtools bridge: connections from web pages are refused", http.StatusForbidden)
		return
	}
	if h, _, err := net.SplitHostPort(r.Host); err != nil || (h != "127.0.0.1" && h != "localhost") {
		http.Error(w, "devtools bridge: wrong Host", http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	client, err := br.mux.newClient(ctx)
	cancel()
	if err != nil {
		http.Error(w, "devtools bridge: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer client.Close()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(-1) // what a DevTools client sends is its own business
	ctx, cancel = context.WithCancel(r.Context())
	defer cancel()
	go func() {
		defer cancel()
		for {
			msg, ok := client.Next(ctx)
			if !ok {
				return
			}
			if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
				return
			}
		}
	}()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		if err := client.Send(data); err != nil {
			br.log.Debug("devtools bridge: a client's message", "error", err)
			if errors.Is(err, net.ErrClosed) {
				return
			}
		}
	}
}
