package cdppipe

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// WSConn is a minimal websocket client (RFC 6455) for a DevTools endpoint on
// loopback: text messages out in one frame, messages in as a stream of their
// frames, so that a 100 MB answer is never held whole. It is not safe for
// concurrent use, and it speaks no extensions and no TLS. Only an attached
// Chrome's endpoint is dialled with it: a launched one has no port, and its
// streamed snapshot goes through Mux.
type WSConn struct {
	c  net.Conn
	br *bufio.Reader

	// The message being read: bytes left in its current frame, whether that
	// frame is its last, and the mask of a masked frame.
	left    int64
	fin     bool
	mask    [4]byte
	masked  bool
	maskPos int
	reading bool
}

// wsHandshakeTimeout bounds the handshake: the endpoint is local.
const wsHandshakeTimeout = 5 * time.Second

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// DialWS connects to a ws:// address, within ctx for its handshake (and at
// most wsHandshakeTimeout); ctx does not bound the connection after that.
// It speaks no wss://.
func DialWS(ctx context.Context, addr string) (*WSConn, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "ws" {
		return nil, fmt.Errorf("%s: only ws:// is supported", addr)
	}
	var d net.Dialer
	hctx, cancel := context.WithTimeout(ctx, wsHandshakeTimeout)
	defer cancel()
	c, err := d.DialContext(hctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	deadline, _ := hctx.Deadline()
	c.SetDeadline(deadline)
	var nonce [16]byte
	rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
		"\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	resp.Body.Close()
	sum := sha1.Sum([]byte(key + wsGUID))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		c.Close()
		return nil, fmt.Errorf("%s: the endpoint refused the websocket (%s)", addr, resp.Status)
	}
	c.SetDeadline(time.Time{})
	return &WSConn{c: c, br: br}, nil
}

// Close closes the connection; a read in progress fails.
func (w *WSConn) Close() error { return w.c.Close() }

// WriteText sends one text message in one masked frame.
func (w *WSConn) WriteText(p []byte) error {
	return w.writeFrame(0x1, p)
}

func (w *WSConn) writeFrame(op byte, p []byte) error {
	hdr := make([]byte, 0, 14+len(p))
	hdr = append(hdr, 0x80|op)
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	for i, b := range p {
		hdr = append(hdr, b^mask[i%4])
	}
	_, err := w.c.Write(hdr)
	return err
}

// NextMessage returns a reader of the next data message, first reading away
// what is left of the one before. It answers pings and fails on a close.
func (w *WSConn) NextMessage() (io.Reader, error) {
	if w.reading {
		if _, err := io.Copy(io.Discard, (*wsMessage)(w)); err != nil {
			return nil, err
		}
	}
	for {
		op, err := w.frame()
		if err != nil {
			return nil, err
		}
		if op == 0x1 || op == 0x2 {
			w.reading = true
			return (*wsMessage)(w), nil
		}
		// A continuation without a message: skip it.
		if _, err := io.CopyN(io.Discard, w.br, w.left); err != nil {
			return nil, err
		}
	}
}

// frame reads frame headers up to the next data frame, handling control
// frames on the way, and returns its opcode.
func (w *WSConn) frame() (byte, error) {
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return 0, err
		}
		fin, op := h[0]&0x80 != 0, h[0]&0x0f
		n := int64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return 0, err
			}
			n = int64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return 0, err
			}
			n = int64(binary.BigEndian.Uint64(b[:]) & (1<<63 - 1))
		}
		w.masked = h[1]&0x80 != 0
		if w.masked {
			if _, err := io.ReadFull(w.br, w.mask[:]); err != nil {
				return 0, err
			}
		}
		w.maskPos = 0
		if op < 0x8 {
			w.left, w.fin = n, fin
			return op, nil
		}
		// Control frames are short and never fragmented.
		payload := make([]byte, n)
		if _, err := io.ReadFull(w.br, payload); err != nil {
			return 0, err
		}
		w.unmask(payload)
		switch op {
		case 0x8:
			return 0, errors.New("the endpoint closed the connection: " + strings.TrimSpace(string(payload[min(2, len(payload)):])))
		case 0x9:
			if err := w.writeFrame(0xA, payload); err != nil {
				return 0, err
			}
		}
	}
}

func (w *WSConn) unmask(p []byte) {
	if !w.masked {
		return
	}
	for i := range p {
		p[i] ^= w.mask[w.maskPos%4]
		w.maskPos++
	}
}

// wsMessage reads the payload of the current message across its frames.
type wsMessage WSConn

func (m *wsMessage) Read(p []byte) (int, error) {
	w := (*WSConn)(m)
	for w.left == 0 {
		if w.fin {
			w.reading = false
			return 0, io.EOF
		}
		op, err := w.frame()
		if err != nil {
			return 0, err
		}
		if op != 0x0 {
			return 0, errors.New("websocket: a new message began inside a fragmented one")
		}
	}
	if int64(len(p)) > w.left {
		p = p[:w.left]
	}
	n, err := w.br.Read(p)
	w.unmask(p[:n])
	w.left -= int64(n)
	if err == io.EOF && w.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
