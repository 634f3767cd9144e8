package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/mcptest"
)

// serveReal runs ServeHTTP on a loopback port of its own, as ListenHTTP
// does, and returns its base URL and the test server behind it.
func serveReal(t *testing.T, opts HTTPOptions) (string, *testServer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeHTTP(ctx, ln, ts.srv, opts) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return "http://" + ln.Addr().String(), ts
}

// dial opens a raw connection to base, for requests no well-behaved client
// sends, with a deadline that turns a hang into a failure.
func dial(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// trickle sends the headers of a POST to /mcp announcing a body of size
// bytes, then the body one byte every 20 ms, until the body is sent or the
// connection fails; finished is set if the whole body went out.
func trickle(c net.Conn, token string, size int, finished *atomic.Bool) {
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", token, size)
	for range size {
		if _, err := c.Write([]byte(" ")); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // the attack: a slow sender
	}
	finished.Store(true)
}

// TestAttackIdleConnectionsClosed: 50 keep-alive connections that sent one
// request and then nothing are closed by the server after IdleTimeout.
func TestAttackIdleConnectionsClosed(t *testing.T) {
	base, _ := serveReal(t, HTTPOptions{IdleTimeout: 200 * time.Millisecond})
	conns := make([]net.Conn, 50)
	for i := range conns {
		c := dial(t, base)
		fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			t.Fatal("the server closed a keep-alive connection after its answer")
		}
		conns[i] = c
	}
	for i, c := range conns {
		// The event: the server ends the connection (EOF), well before the
		// 30 s deadline dial set.
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("idle connection %d: read %v; want EOF, closed by the server", i, err)
		}
	}
}

// TestAttackSlowBody: a body sent byte by byte is cut off after BodyTimeout
// with a 408, while another client's calls are answered meanwhile, and a
// tool call that runs longer than BodyTimeout is not cut.
func TestAttackSlowBody(t *testing.T) {
	opts := HTTPOptions{Tokens: map[string]string{"alice": "alice-secret", "bob": "bob-secret"}, BodyTimeout: 300 * time.Millisecond}
	base, ts := serveReal(t, opts)
	alice := mcpClient(t, base, map[string]string{"Authorization": "Bearer alice-secret"})
	long := make(chan string, 1)
	go func() {
		r := mcptest.Call(t.Context(), alice, "block", map[string]any{"name": "long"})
		if r.Err != nil {
			long <- r.Err.Error()
			return
		}
		long <- r.Text
	}()
	<-ts.started

	c := dial(t, base)
	var finished atomic.Bool
	go trickle(c, "bob-secret", 2000, &finished)
	if got := callText(t, alice, "echo", map[string]any{"say": "meanwhile"}); got != "meanwhile" {
		t.Errorf("echo during the slow body: %q", got)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to the slow body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || finished.Load() {
		t.Fatalf("slow body: %d (body sent whole: %t) %s; want 408 before it ended", resp.StatusCode, finished.Load(), body)
	}
	if want := "the request body did not arrive within 300ms; send it whole, at once"; !strings.Contains(string(body), want) {
		t.Errorf("408 body %s, want %q", body, want)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("connection after the 408: %v; want it closed", err)
	}
	// The long call's body deadline, had it been left, passed before the
	// 408: the call must still be running, and the server answering.
	if got := callText(t, alice, "echo", map[string]any{"say": "after"}); got != "after" {
		t.Errorf("echo after: %q", got)
	}
	select {
	case name := <-ts.cancelled:
		t.Fatalf("call %s was cancelled by the body deadline", name)
	case text := <-long:
		t.Fatalf("the long call ended: %s", text)
	default:
	}
}

// isReset reports whether err is a connection reset, which a closed
// connection with unread input gives.
func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// TestAttack401BeforeBody: a request with a wrong token is refused on its
// headers, at once, though its body is still being sent byte by byte.
func TestAttack401BeforeBody(t *testing.T) {
	base, _ := serveReal(t, HTTPOptions{Tokens: map[string]string{"alice": "alice-secret"}, BodyTimeout: time.Minute})
	for _, token := range []string{"wrong-secret", ""} {
		c := dial(t, base)
		var finished atomic.Bool
		go trickle(c, token, 2000, &finished)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("token %q: no answer: %v", token, err)
		}
		if resp.StatusCode != http.StatusUnauthorized || finished.Load() {
			t.Errorf("token %q: %d (body sent whole: %t); want 401 before the body ended", token, resp.StatusCode, finished.Load())
		}
		if !resp.Close {
			t.Errorf("token %q: the 401 keeps the connection, whose unread body would follow", token)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
			t.Errorf("token %q: connection after the 401: %v; want it closed at once", token, err)
		}
	}
}
