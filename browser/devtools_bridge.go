package browser

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

// devToolsBridge serves a launched Chrome's DevTools protocol to clients
// such as Lighthouse's puppeteer, on 127.0.0.1 and at one path:
// /devtools/browser/ID, ID 128 random bits, new for each launch. It serves
// nothing else (no /json endpoints: 404), and it refuses (403) every
// upgrade that carries an Origin header: browsers always send one, so no
// page can connect, even one told the whole URL; DevTools clients outside a
// browser (Node's ws, chromedp) send none. Each connection is a cdpMux
// client with a browser session of its own.
type devToolsBridge struct {
	mux  *cdpMux
	log  *slog.Logger
	ln   net.Listener
	srv  *http.Server
	addr string // 127.0.0.1:PORT
	path string
	url  string
}

// devToolsBridge returns l's bridge, starting it on the first call; it
// stops when Chrome's pipe closes.
func (l *launch) devToolsBridge(log *slog.Logger) (*devToolsBridge, error) {
	l.bridgeMu.Lock()
	defer l.bridgeMu.Unlock()
	if l.bridge != nil {
		return l.bridge, nil
	}
	if l.mux == nil {
		return nil, errNoMux
	}
	select {
	case <-l.mux.done:
		return nil, errors.New("devtools endpoint: chrome went away; try again")
	default:
	}
	br, err := startBridge(l.mux, log)
	if err != nil {
		return nil, err
	}
	l.bridge = br
	return br, nil
}

func startBridge(mux *cdpMux, log *slog.Logger) (*devToolsBridge, error) {
	var id [16]byte
	rand.Read(id[:])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	br := &devToolsBridge{mux: mux, log: log, ln: ln, addr: ln.Addr().String(), path: "/devtools/browser/" + hex.EncodeToString(id[:])}
	br.url = "ws://" + br.addr + br.path
	br.srv = &http.Server{Handler: br, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go br.srv.Serve(ln)
	go func() {
		<-mux.done
		br.srv.Close()
	}()
	return br, nil
}

// ServeHTTP accepts the websocket of a DevTools client.
func (br *devToolsBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
