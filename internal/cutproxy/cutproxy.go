// Package cutproxy is a TCP proxy on loopback that a test can cut, to play
// a network partition between one process and a server (pagemux and etcd):
// while cut it forwards nothing, in either direction, on open connections
// and on new ones, yet closes none, so the client sees no error, only
// silence, as it would behind a dead link. Resume forwards again, and what
// was held back flows on.
//
// It is for tests: it does not shape traffic, drop bytes or delay them.
package cutproxy

import (
	"net"
	"sync"
)

// Proxy forwards connections made to Addr to a target address.
type Proxy struct {
	target string
	ln     net.Listener

	mu     sync.Mutex
	open   chan struct{} // closed while forwarding; a new one while cut
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// New starts a proxy on a free loopback port that forwards to target
// (host:port). It forwards until Cut; Close stops it.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	open := make(chan struct{})
	close(open)
	p := &Proxy{target: target, ln: ln, open: open, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's address, 127.0.0.1:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns the proxy's address as an http:// URL, as etcd's clients
// take endpoints.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// Cut stops forwarding: bytes read on either side are held until Resume,
// and new connections are accepted but not dialled through. Nothing is
// closed. Cutting a cut proxy does nothing.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

// Resume forwards again, what was held back first. Resuming a proxy that
// is not cut does nothing.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.Resume() // releases the copy loops waiting at the gate
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// gate waits until the proxy forwards; it reports false once it is closed.
func (p *Proxy) gate() bool {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	<-open
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed
}

// track adds c to the open connections, or closes it when the proxy is.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	if !p.gate() {
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.copy(server, client); done <- struct{}{} }()
	go func() { p.copy(client, server); done <- struct{}{} }()
	<-done
	// One side ended: end the other too, as a proxy that is one hop does.
	_ = client.Close()
	_ = server.Close()
	<-done
}

// copy forwards from src to dst, waiting at the gate before each write.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: serve closes both sides
		}
	}
}
