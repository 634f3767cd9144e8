package cutproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestCutHoldsBytesAndResumeDelivers proves a cut proxy delivers nothing
// yet closes nothing, and that what was sent while cut arrives on Resume.
func TestCutHoldsBytesAndResumeDelivers(t *testing.T) {
	t.Parallel()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := c.Write([]byte(sc.Text() + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	p, err := New(echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(msg string) string {
		t.Helper()
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read %q: %v", msg, err)
		}
		return line
	}
	if got := roundTrip("one"); got != "one\n" {
		t.Fatalf("forwarding: got %q", got)
	}

	p.Cut()
	if _, err := c.Write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	// Silence is what is tested here: the read must time out, not fail.
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("cut proxy delivered %q", line)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("cut proxy closed the connection: %v", err)
	}
	// A connection made while cut is accepted and held too.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write([]byte("three\n")); err != nil {
		t.Fatal(err)
	}

	p.Resume()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "two\n" {
		t.Fatalf("after resume: got %q, %v; want the held \"two\"", line, err)
	}
	_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := bufio.NewReader(c2).ReadString('\n'); err != nil || line != "three\n" {
		t.Fatalf("connection made while cut: got %q, %v", line, err)
	}
	if got := roundTrip("four"); got != "four\n" {
		t.Fatalf("after resume: got %q", got)
	}
}
