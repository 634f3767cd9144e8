package cdppipe

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"
)

// The bridge serves its one path and nothing else, refuses a web page's
// Origin, and joins a DevTools client (here WSConn, as an attached Chrome's
// snapshot dials it) to the pipe: the client's command reaches Chrome in the
// client's browser session, and the answer comes back with the client's id.
func TestBridge(t *testing.T) {
	t.Parallel()
	f := newFakeChrome(t)
	br, err := StartBridge(f.mux)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^ws://127\.0\.0\.1:[0-9]+/devtools/browser/[0-9a-f]{32}$`).MatchString(br.URL()) {
		t.Fatalf("URL = %q, want ws://127.0.0.1:PORT/devtools/browser/<128-bit hex>", br.URL())
	}
	if u, _ := url.Parse(br.URL()); u.Host != br.Addr() {
		t.Fatalf("Addr = %q, URL %q", br.Addr(), br.URL())
	}
	for _, path := range []string{"/json/version", "/json/list", "/"} {
		res, err := http.Get("http://" + br.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404", path, res.Status)
		}
	}
	page, _ := url.Parse(br.URL())
	page.Scheme = "http"
	req, _ := http.NewRequest("GET", page.String(), nil)
	req.Header.Set("Origin", "http://evil.example")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a request with an Origin: %s, want 403", res.Status)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	dialed := make(chan *WSConn, 1)
	go func() {
		c, err := DialWS(ctx, br.URL())
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	att := f.chromeReads(t)
	if string(att["method"]) != `"Target.attachToBrowserTarget"` {
		t.Fatalf("want an attach, got %v", att)
	}
	f.chromeSays(t, `{"id":`+string(att["id"])+`,"result":{"sessionId":"BS"}}`)
	c := <-dialed
	if c == nil {
		t.FailNow()
	}
	defer c.Close()
	if err := c.WriteText([]byte(`{"id":7,"method":"Browser.getVersion","params":{}}`)); err != nil {
		t.Fatal(err)
	}
	cmd := f.chromeReads(t)
	if string(cmd["method"]) != `"Browser.getVersion"` || string(cmd["sessionId"]) != `"BS"` {
		t.Fatalf("the client's command reached chrome as %v", cmd)
	}
	f.chromeSays(t, `{"id":`+string(cmd["id"])+`,"result":{"product":"Chrome"},"sessionId":"BS"}`)
	msg, err := c.NextMessage()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(msg); err != nil || string(got) != `{"id":7,"result":{"product":"Chrome"}}` {
		t.Fatalf("the client read %s (%v)", got, err)
	}
	if n := f.mux.ClientCount(); n != 1 {
		t.Errorf("ClientCount = %d, want 1", n)
	}

	// Chrome goes: the bridge stops, and no new one starts on its mux.
	f.chromeOut.Close()
	if _, err := c.NextMessage(); err == nil {
		t.Error("the client's connection outlived chrome's pipe")
	}
	if _, err := StartBridge(f.mux); err == nil {
		t.Error("a bridge started on a closed mux")
	}
}
