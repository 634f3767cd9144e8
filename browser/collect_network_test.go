package browser

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
)

// Synthetic events, as Chrome sends them.

func sent(id, loader string, typ network.ResourceType, url string) *network.EventRequestWillBeSent {
	return sentFrom(fakeMain, id, loader, typ, url)
}

func sentFrom(frame cdp.FrameID, id, loader string, typ network.ResourceType, url string) *network.EventRequestWillBeSent {
	return &network.EventRequestWillBeSent{
		RequestID: network.RequestID(id), LoaderID: cdp.LoaderID(loader), FrameID: frame, Type: typ,
		Request: &network.Request{URL: url, Method: "GET", Headers: network.Headers{"accept": "*/*"}},
	}
}

// navSent is the main frame's request for the document of loader.
func navSent(loader string) *network.EventRequestWillBeSent {
	return sent(loader, loader, network.ResourceTypeDocument, "http://x/"+loader)
}

func responded(id string, status int64) *network.EventResponseReceived {
	return &network.EventResponseReceived{RequestID: network.RequestID(id), Type: network.ResourceTypeFetch, Response: &network.Response{Status: status, Headers: network.Headers{"content-type": "text/plain"}}}
}

func finished(id string) *network.EventLoadingFinished {
	return &network.EventLoadingFinished{RequestID: network.RequestID(id), EncodedDataLength: 10}
}

// listed renders a listing as "id url status" lines, for compact asserts.
func listed(n *Network, preserved bool) []string {
	rs, _ := n.List(preserved)
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%d %s %s", r.ID, r.URL, r.Status()))
	}
	return out
}

// The interleavings the page's event stream can hold: each case feeds events
// in one order and says where every request must be filed.
func TestNetworkDocuments(t *testing.T) {
	tests := []struct {
		name               string
		events             []any
		current, preserved []string
	}{{
		name: "a slow response that finishes after the next navigation stays with its document",
		events: []any{
			navSent("L1"), navigated("L1"),
			sent("slow", "L1", network.ResourceTypeFetch, "http://x/slow"),
			navSent("L2"), navigated("L2"),
			responded("slow", 200), finished("slow"),
		},
		current:   []string{"3 http://x/L2 pending"},
		preserved: []string{"1 http://x/L1 pending", "2 http://x/slow 200", "3 http://x/L2 pending"},
	}, {
		name: "a response known only from the network stack after the document went away",
		events: []any{
			navSent("L1"), navigated("L1"),
			sent("keep", "L1", network.ResourceTypeFetch, "http://x/keepalive"),
			navSent("L2"), navigated("L2"),
			&network.EventResponseReceivedExtraInfo{RequestID: "keep", StatusCode: 204, Headers: network.Headers{"x": "y"}},
		},
		current:   []string{"3 http://x/L2 pending"},
		preserved: []string{"1 http://x/L1 pending", "2 http://x/keepalive 204", "3 http://x/L2 pending"},
	}, {
		name: "a request of an old document's frame that starts late goes to that document",
		events: []any{
			navSent("L1"), navigated("L1"),
			sentFrom("CHILD", "C1", "C1", network.ResourceTypeDocument, "http://x/frame"),
			navSent("L2"), navigated("L2"),
			sentFrom("CHILD", "late", "C1", network.ResourceTypeImage, "http://x/late.png"),
		},
		current:   []string{"3 http://x/L2 pending"},
		preserved: []string{"1 http://x/L1 pending", "2 http://x/frame pending", "4 http://x/late.png pending", "3 http://x/L2 pending"},
	}, {
		name: "a navigation that never commits stays with the document that made it",
		events: []any{
			navSent("L1"), navigated("L1"),
			navSent("L204"), responded("L204", 204), finished("L204"),
		},
		current:   []string{"1 http://x/L1 pending", "2 http://x/L204 204"},
		preserved: []string{"1 http://x/L1 pending", "2 http://x/L204 204"},
	}, {
		name: "an old document's request before the new one commits",
		events: []any{
			navSent("L1"), navigated("L1"),
			navSent("L2"),
			sent("unload", "L1", network.ResourceTypePing, "http://x/beacon"),
			navigated("L2"),
		},
		current:   []string{"2 http://x/L2 pending"},
		preserved: []string{"1 http://x/L1 pending", "3 http://x/beacon pending", "2 http://x/L2 pending"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDoc()
			f.feed(tt.events...)
			if got := listed(f.net, false); !slices.Equal(got, tt.current) {
				t.Errorf("current:\n got %q\nwant %q", got, tt.current)
			}
			// The page began on about:blank: its empty document is kept too.
			if got := listed(f.net, true); !slices.Equal(got, tt.preserved) {
				t.Errorf("preserved:\n got %q\nwant %q", got, tt.preserved)
			}
		})
	}
}

// The same stream, fed in every order the late events could take, files
// the slow request in its document each time.
func TestNetworkLateEventsAnyOrder(t *testing.T) {
	late := []any{responded("slow", 200), finished("slow"), &network.EventResponseReceivedExtraInfo{RequestID: "slow", StatusCode: 200}}
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {0, 2, 1}} {
		f := newFakeDoc()
		f.feed(navSent("L1"), navigated("L1"), sent("slow", "L1", network.ResourceTypeFetch, "http://x/slow"), navSent("L2"))
		f.feed(late[order[0]])
		f.feed(navigated("L2"))
		f.feed(late[order[1]], late[order[2]])
		r, err := f.net.Get(2)
		if err != nil {
			t.Fatal(err)
		}
		if r.Gen != 1 || r.Status() != "200" || !r.Finished {
			t.Errorf("order %v: slow request in generation %d status %s finished %v, want generation 1, 200, finished", order, r.Gen, r.Status(), r.Finished)
		}
		if got := listed(f.net, false); slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "slow") }) {
			t.Errorf("order %v: the slow request shows in the new document: %q", order, got)
		}
	}
}

func TestNetworkRedirectsAndExtraInfo(t *testing.T) {
	f := newFakeDoc()
	f.feed(navSent("L1"), navigated("L1"))
	// The raw headers may come before the request they belong to.
	f.feed(&network.EventRequestWillBeSentExtraInfo{RequestID: "r", Headers: network.Headers{"cookie": "a=1"}})
	f.feed(sent("r", "L1", network.ResourceTypeFetch, "http://x/old"))
	hop := sent("r", "L1", network.ResourceTypeFetch, "http://x/new")
	hop.RedirectResponse = &network.Response{Status: 302}
	f.feed(hop)
	f.feed(&network.EventRequestWillBeSentExtraInfo{RequestID: "r", Headers: network.Headers{"cookie": "b=2"}})
	f.feed(responded("r", 200), finished("r"))

	first, _ := f.net.Get(2)
	second, _ := f.net.Get(3)
	if first.Status() != "302" || first.RedirectTo != 3 || !first.Finished || first.Headers["cookie"] != "a=1" {
		t.Errorf("first hop: %s → %d, finished %v, headers %v", first.Status(), first.RedirectTo, first.Finished, first.Headers)
	}
	if second.Status() != "200" || second.RedirectFrom != 2 || second.URL != "http://x/new" || second.Headers["cookie"] != "b=2" {
		t.Errorf("second hop: %s ← %d %s, headers %v", second.Status(), second.RedirectFrom, second.URL, second.Headers)
	}
	if latest, ok := f.net.Latest(); !ok || latest.ID != 3 {
		t.Errorf("latest %d, want 3", latest.ID)
	}
}

func TestNetworkKeepsFourDocuments(t *testing.T) {
	f := newFakeDoc()
	for i := 1; i <= 6; i++ {
		l := fmt.Sprint("L", i)
		f.feed(navSent(l), navigated(l))
	}
	got := listed(f.net, true)
	want := []string{"3 http://x/L3 pending", "4 http://x/L4 pending", "5 http://x/L5 pending", "6 http://x/L6 pending"}
	if !slices.Equal(got, want) {
		t.Fatalf("preserved %q, want the current and %d before it", got, PreservedDocuments)
	}
	if _, err := f.net.Get(1); err == nil || !strings.Contains(err.Error(), "no longer kept") {
		t.Fatalf("Get of an evicted request: %v, want it said to be no longer kept", err)
	}
	if _, err := f.net.Get(99); err == nil || !strings.Contains(err.Error(), "no request with reqid 99") {
		t.Fatalf("Get of an unknown request: %v", err)
	}
	// Late events of an evicted document are dropped, not misfiled.
	f.feed(responded("L1", 200), sent("x", "L1", network.ResourceTypeImage, "http://x/ghost.png"))
	if got := listed(f.net, true); !slices.Equal(got, want) {
		t.Fatalf("after late events of an evicted document: %q", got)
	}
	if len(f.net.flights) > 5 {
		t.Errorf("the collector holds %d flights of evicted documents", len(f.net.flights))
	}
}

func TestNetworkBucketCap(t *testing.T) {
	f := newFakeDoc()
	f.feed(navSent("L1"), navigated("L1"))
	for i := range BucketCap + 5 {
		f.feed(sent(fmt.Sprint("r", i), "L1", network.ResourceTypeImage, fmt.Sprint("http://x/", i)))
	}
	rs, info := f.net.List(false)
	if len(rs) != BucketCap || info.Dropped != 6 || rs[0].ID != 7 {
		t.Fatalf("%d requests, %d dropped, first id %d; want %d, 6 dropped (the navigation among them), first id 7", len(rs), info.Dropped, rs[0].ID, BucketCap)
	}
	if len(f.net.flights) > BucketCap+maxOrphans {
		t.Fatalf("%d flights kept for %d requests", len(f.net.flights), BucketCap)
	}
}

func TestNetworkDropsEventsAfterClose(t *testing.T) {
	f := newFakeDoc()
	f.feed(navSent("L1"), navigated("L1"), sent("a", "L1", network.ResourceTypeFetch, "http://x/a"))
	f.closed = true
	f.feed(responded("a", 200), sent("b", "L1", network.ResourceTypeFetch, "http://x/b"))
	if got := listed(f.net, true); !slices.Equal(got, []string{"1 http://x/L1 pending", "2 http://x/a pending"}) {
		t.Fatalf("after close: %q", got)
	}
}

// A log entry about a request goes to the request's document, even when it
// arrives after the next navigation.
func TestLogEntryFollowsItsRequest(t *testing.T) {
	f := newFakeDoc()
	f.feed(navSent("L1"), navigated("L1"), sent("img", "L1", network.ResourceTypeImage, "http://x/missing.png"))
	f.feed(navSent("L2"), navigated("L2"))
	f.feed(&log.EventEntryAdded{Entry: &log.Entry{Source: "network", Level: log.EntryLevelError, Text: "Failed to load resource", NetworkRequestID: "img"}})
	if cur, _ := f.con.List(false); len(cur) != 0 {
		t.Fatalf("the old document's log entry shows in the new one: %+v", cur[0])
	}
	all, _ := f.con.List(true)
	if len(all) != 1 || all[0].Gen != 1 || all[0].Type != "error" {
		t.Fatalf("preserved %+v, want the entry in generation 1", all)
	}
}

// The collectors see a real page from its attach on, and bodies can be read.
func TestCollectorsOnRealPage(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<!doctype html><title>P</title><script>
console.log("data", {ok: true});
fetch("/echo", {method: "POST", body: "ping"}).then(r => r.text()).then(t => console.info("echo", t));
</script>`)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "got %s", body)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	b := sharedBrowser(t)
	ctx := t.Context()
	p, err := b.NewPage(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, p)
	if err := p.Navigate(ctx, srv.URL+"/page", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var echo Request
	deadline := time.Now().Add(10 * time.Second)
	for { // bounded polling: the fetch finishes on its own time
		rs, _ := p.Network().List(false)
		for _, r := range rs {
			if strings.HasSuffix(r.URL, "/echo") && r.Finished {
				echo = r
			}
		}
		all, _ := p.Console().List(false)
		// The page's own messages; Chrome may log a missing favicon among them.
		var msgs []*ConsoleMessage
		for _, m := range all {
			if !strings.HasPrefix(m.Text, "Failed to load resource") {
				msgs = append(msgs, m)
			}
		}
		if echo.ID != 0 && len(msgs) >= 2 {
			if msgs[0].Text != `data {"ok":true}` || msgs[1].Text != "echo got ping" || msgs[1].Type != "info" {
				t.Fatalf("messages %q %q", msgs[0].Text, msgs[1].Text)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no finished /echo request and 2 messages after 10s: %+v %+v", rs, msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rs, _ := p.Network().List(false); rs[0].URL != srv.URL+"/page" || !rs[0].Navigation || rs[0].Status() != "200" {
		t.Fatalf("first request %+v, want the navigation to /page", rs[0])
	}
	resp, err := p.ResponseBody(ctx, echo)
	if err != nil || string(resp) != "got ping" {
		t.Fatalf("response body %q %v", resp, err)
	}
	req, err := p.RequestBody(ctx, echo)
	if err != nil || string(req) != "ping" {
		t.Fatalf("request body %q %v", req, err)
	}
	msgs, _ := p.Console().List(false)
	if args := p.ConsoleArgs(ctx, msgs[0]); !slices.Equal(args, []string{"data", `{"ok":true}`}) {
		t.Fatalf("args %q", args)
	}
}

// WaitRequests waits for the fetch and XHR requests sent since its mark and
// for no other: not those sent before it, not an image's, not beyond its
// deadline, and not for a document that went (all are forgotten).
func TestWaitRequests(t *testing.T) {
	t.Parallel()
	f := newFakeDoc()
	f.feed(navSent("L1"), navigated("L1"))
	ctx := t.Context()
	later := time.Now().Add(time.Minute)
	f.feed(sent("old", "L1", network.ResourceTypeFetch, "http://x/old"))
	m := f.net.Mark()
	f.feed(sent("img", "L1", network.ResourceTypeImage, "http://x/i.png"))
	if f.net.WaitRequests(ctx, m, later) {
		t.Fatal("waited for a request sent before the mark, or for an image")
	}
	// waitFor runs WaitRequests aside, and returns once it waits; feeding
	// then ends it.
	blocked := make(chan struct{}, 1)
	f.net.blocks = func() { blocked <- struct{}{} }
	waitFor := func(m RequestMark, until time.Time) <-chan bool {
		done := make(chan bool, 1)
		go func() { done <- f.net.WaitRequests(ctx, m, until) }()
		<-blocked
		return done
	}
	for _, typ := range []network.ResourceType{network.ResourceTypeFetch, network.ResourceTypeXHR} {
		id := "r-" + string(typ)
		f.feed(sent(id, "L1", typ, "http://x/"+id))
		done := waitFor(m, later)
		f.feed(responded(id, 200), finished(id))
		if !<-done {
			t.Errorf("%s: WaitRequests did not wait for it", typ)
		}
	}
	// A failed one has ended too.
	f.feed(sent("fail", "L1", network.ResourceTypeFetch, "http://x/fail"))
	done := waitFor(m, later)
	f.feed(&network.EventLoadingFailed{RequestID: "fail", ErrorText: "net::ERR_FAILED"})
	if !<-done {
		t.Error("a failed request: WaitRequests did not wait for it")
	}
	// Past its deadline it does not wait.
	f.feed(sent("poll", "L1", network.ResourceTypeFetch, "http://x/poll"))
	if f.net.WaitRequests(ctx, m, time.Now()) {
		t.Error("waited past the deadline")
	}
	// A navigation forgets the old document's requests in flight.
	done = waitFor(m, later)
	f.feed(navSent("L2"), navigated("L2"))
	if !<-done {
		t.Error("WaitRequests did not wait for the long poll")
	}
	if f.net.WaitRequests(ctx, RequestMark(0), later) {
		t.Error("the old document's requests are still waited for")
	}
}
