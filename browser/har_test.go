package browser

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
)

// TestHARTimings: Chrome's ResourceTiming and the collector's timestamps in
// HAR's phases, with -1 for the phases that did not happen.
func TestHARTimings(t *testing.T) {
	fresh := &network.ResourceTiming{RequestTime: 100.010, DNSStart: 1, DNSEnd: 3, ConnectStart: 3, ConnectEnd: 9, SslStart: 5, SslEnd: 9,
		SendStart: 10, SendEnd: 10.5, ReceiveHeadersEnd: 30.5}
	reused := &network.ResourceTiming{RequestTime: 100.010, DNSStart: -1, DNSEnd: -1, ConnectStart: -1, ConnectEnd: -1, SslStart: -1, SslEnd: -1,
		SendStart: 2, SendEnd: 3, ReceiveHeadersEnd: 13}
	tests := []struct {
		name string
		r    Request
		want HARTimings
	}{
		{"a new connection", Request{Start: 100, End: 100.0505, Response: &network.Response{Timing: fresh}},
			HARTimings{Blocked: 11, DNS: 2, Connect: 6, SSL: 4, Send: 0.5, Wait: 20, Receive: 10}},
		{"a reused connection", Request{Start: 100, End: 100.025, Response: &network.Response{Timing: reused}},
			HARTimings{Blocked: 12, DNS: -1, Connect: -1, SSL: -1, Send: 1, Wait: 10, Receive: 2}},
		{"no timing: the memory cache", Request{Start: 100, ResponseAt: 100.002, End: 100.003, Response: &network.Response{}},
			HARTimings{Blocked: -1, DNS: -1, Connect: -1, SSL: -1, Send: 0, Wait: 2, Receive: 1}},
		{"failed before an answer", Request{Start: 100, End: 100.004, Failure: "net::ERR_EMPTY_RESPONSE"},
			HARTimings{Blocked: -1, DNS: -1, Connect: -1, SSL: -1, Send: 0, Wait: 0, Receive: 4}},
		{"still loading", Request{Start: 100, Response: &network.Response{Timing: reused}},
			HARTimings{Blocked: 12, DNS: -1, Connect: -1, SSL: -1, Send: 1, Wait: 10, Receive: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := harTimings(tt.r)
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	// SSL is part of connect: the total does not count it twice.
	if got := (HARTimings{Blocked: 11, DNS: 2, Connect: 6, SSL: 4, Send: 0.5, Wait: 20, Receive: 10}).total(); got != 49.5 {
		t.Errorf("total %v, want 49.5", got)
	}
}

// TestHARBodies: text as is, binary as base64, both cut at the cap, a cut
// text at a character boundary; a body Chrome no longer holds is a comment.
func TestHARBodies(t *testing.T) {
	tests := []struct {
		data          string
		max           int
		text, enc     string
		truncated     bool
		wantSize, cap int
	}{
		{"hello", 10, "hello", "", false, 5, 10},
		{"hello world", 5, "hello", "", true, 11, 5},
		{"\xff\xfe\x00\x01\x80", 10, "//4AAYA=", "base64", false, 5, 10},
		{"\xff\xfe\x00\x01\x80", 2, "//4=", "base64", true, 5, 2},
		{"héllo", 2, "h", "", true, 6, 1}, // é is two bytes: the cut falls inside it
	}
	for _, tt := range tests {
		whole := HARBody{Data: []byte(tt.data)}        // as BuildHAR may be given it
		fetched, _ := harBody(whole.Data, nil, tt.max) // as Page.HAR gives it, cut at once
		if len(fetched.Data) > tt.max {
			t.Errorf("%q: a fetched body keeps %d bytes, the cap is %d", tt.data, len(fetched.Data), tt.max)
		}
		for _, b := range []HARBody{whole, fetched} {
			var c HARContent
			cut := c.fill(b, tt.max)
			if c.Text != tt.text || c.Encoding != tt.enc || cut != tt.truncated || c.Size != int64(tt.wantSize) {
				t.Errorf("%q cut at %d: got %q %q cut=%v size=%d, want %q %q cut=%v size=%d", tt.data, tt.max, c.Text, c.Encoding, cut, c.Size, tt.text, tt.enc, tt.truncated, tt.wantSize)
			}
			if cut != strings.Contains(c.Comment, fmt.Sprintf("cut to its first %d of %d bytes", tt.cap, tt.wantSize)) {
				t.Errorf("%q: comment %q", tt.data, c.Comment)
			}
		}
	}
	var c HARContent
	c.Size = -1
	if c.fill(HARBody{Missing: "Chrome no longer holds it"}, 10); c.Comment != "body not available: Chrome no longer holds it" || c.Text != "" || c.Size != -1 {
		t.Errorf("a missing body: %+v", c)
	}
}

// TestBuildHAR: a small page's requests as HAR: pages by document, entries
// in order with headers, cookies, query, redirects, failures and bodies.
func TestBuildHAR(t *testing.T) {
	sent := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	doc := Request{ID: 1, Gen: 1, Navigation: true, URL: "http://x/page?a=1&b=two%20words", Method: "GET", Type: network.ResourceTypeDocument,
		Headers: network.Headers{"Cookie": "sid=abc; theme=dark", "Accept": "text/html"}, Start: 10, ResponseAt: 10.01, End: 10.02, Sent: sent, Finished: true,
		Response: &network.Response{Status: 200, StatusText: "OK", Protocol: "http/1.1", MimeType: "text/html", RemoteIPAddress: "[::1]", ConnectionID: 7,
			Headers: network.Headers{"Content-Type": "text/html", "Set-Cookie": "a=1; Path=/; HttpOnly\nb=2; Secure; Expires=Wed, 21 Oct 2037 07:28:00 GMT"}},
		EncodedLength: 321}
	redirect := Request{ID: 2, Gen: 1, URL: "http://x/r", Method: "GET", Type: network.ResourceTypeFetch, Start: 10.03, End: 10.04, Finished: true, RedirectTo: 3,
		Response: &network.Response{Status: 302, Headers: network.Headers{"Location": "/to"}}}
	to := Request{ID: 3, Gen: 1, URL: "http://x/to", Method: "GET", Type: network.ResourceTypeFetch, Start: 10.04, End: 10.05, Finished: true, RedirectFrom: 2,
		Response: &network.Response{Status: 200, MimeType: "application/octet-stream"}}
	post := Request{ID: 4, Gen: 1, URL: "http://x/post", Method: "POST", Type: network.ResourceTypeXHR, HasPostData: true, PostData: []byte("ping=1"),
		Headers: network.Headers{"Content-Type": "text/plain"}, Start: 10.05, End: 10.06, Finished: true, Response: &network.Response{Status: 200, MimeType: "text/plain"}}
	failed := Request{ID: 5, Gen: 1, URL: "http://x/abort", Method: "GET", Type: network.ResourceTypeFetch, Start: 10.06, End: 10.07, Finished: true, Failure: "net::ERR_EMPTY_RESPONSE"}
	cached := Request{ID: 7, Gen: 2, URL: "http://x/logo.png", Method: "GET", Type: network.ResourceTypeImage, Start: 11.1, ResponseAt: 11.1, End: 11.1, Finished: true, FromCache: true,
		Response: &network.Response{Status: 200, MimeType: "image/png"}}
	next := Request{ID: 6, Gen: 2, Navigation: true, URL: "http://x/next", Method: "GET", Type: network.ResourceTypeDocument, Start: 11, Response: &network.Response{Status: 200}}

	h, st := BuildHAR(HAROptions{Requests: []Request{doc, redirect, to, post, failed, next, cached}, Content: true, MaxBody: 4, Creator: HARCreator{Name: "pagemux", Version: "test"}, Comment: "why"},
		map[int]HARBody{4: {Data: []byte("ping"), Size: 6}}, // cut as Page.HAR cuts it
		map[int]HARBody{1: {Data: []byte("<p>hi</p>")}, 3: {Data: []byte{0xff, 0x00}}, 4: {Missing: "Chrome no longer holds it"}})

	if h.Log.Version != "1.2" || h.Log.Creator.Name != "pagemux" || h.Log.Comment != "why" {
		t.Errorf("log: %+v", h.Log)
	}
	if st.Entries != 7 || st.Bodies != 2 || st.Truncated != 1 || st.Unavailable[4] != "Chrome no longer holds it" || len(st.Unavailable) != 1 {
		t.Errorf("stats: %+v", st)
	}
	if len(h.Log.Pages) != 2 || h.Log.Pages[0].ID != "page_1" || h.Log.Pages[0].Title != doc.URL || h.Log.Pages[0].StartedDateTime != "2026-01-02T03:04:05.006Z" ||
		h.Log.Pages[1].ID != "page_2" || h.Log.Pages[0].PageTimings.OnLoad != -1 {
		t.Errorf("pages: %+v", h.Log.Pages)
	}
	e := h.Log.Entries
	// Wall times of requests without one come from the first that had one.
	if e[5].StartedDateTime != "2026-01-02T03:04:06.006Z" || e[5].PageRef != "page_2" {
		t.Errorf("the next document's entry: %s %s", e[5].StartedDateTime, e[5].PageRef)
	}
	first := e[0]
	if first.Request.HTTPVersion != "HTTP/1.1" || first.ServerIPAddress != "::1" || first.Connection != "7" || first.Response.TransferSize != 321 || first.ReqID != 1 || first.ResourceType != "document" {
		t.Errorf("document entry: %+v", first)
	}
	wantQuery := []HARNameValue{{"a", "1"}, {"b", "two words"}}
	if fmt.Sprint(first.Request.QueryString) != fmt.Sprint(wantQuery) {
		t.Errorf("query %v, want %v", first.Request.QueryString, wantQuery)
	}
	if fmt.Sprint(first.Request.Cookies) != fmt.Sprint([]HARCookie{{Name: "sid", Value: "abc"}, {Name: "theme", Value: "dark"}}) {
		t.Errorf("request cookies %+v", first.Request.Cookies)
	}
	if c := first.Response.Cookies; len(c) != 2 || c[0].Name != "a" || !c[0].HTTPOnly || c[0].Path != "/" || c[1].Name != "b" || !c[1].Secure || c[1].Expires != "2037-10-21T07:28:00.000Z" {
		t.Errorf("response cookies %+v", c)
	}
	if got := fmt.Sprint(first.Response.Headers); got != "[{Content-Type text/html} {Set-Cookie a=1; Path=/; HttpOnly} {Set-Cookie b=2; Secure; Expires=Wed, 21 Oct 2037 07:28:00 GMT}]" {
		t.Errorf("response headers %s", got)
	}
	if c := first.Response.Content; c.Text != "<p>h" || c.Size != 9 || c.MimeType != "text/html" || !strings.Contains(c.Comment, "cut") {
		t.Errorf("document content %+v", c)
	}
	if e[1].Response.RedirectURL != "http://x/to" || e[1].Response.Status != 302 || e[1].Response.Content.Text != "" {
		t.Errorf("redirect: %+v", e[1].Response)
	}
	if c := e[2].Response.Content; c.Encoding != "base64" || c.Text != "/wA=" {
		t.Errorf("binary content %+v", c)
	}
	if pd := e[3].Request.PostData; pd == nil || pd.Text != "ping" || pd.MimeType != "text/plain" || e[3].Request.BodySize != 6 ||
		e[3].Response.Content.Comment != "body not available: Chrome no longer holds it" {
		t.Errorf("post: %+v %+v", pd, e[3].Response.Content)
	}
	if f := e[4]; f.Response.Status != 0 || f.Response.Error != "net::ERR_EMPTY_RESPONSE" || f.Comment != "failed: net::ERR_EMPTY_RESPONSE" || f.Response.Content.MimeType != "x-unknown" {
		t.Errorf("failed: %+v", f)
	}
	if e[5].Comment != "still loading when the HAR was saved" {
		t.Errorf("pending: %q", e[5].Comment)
	}
	if c := e[6]; c.FromCache != "memory" || c.Response.BodySize != 0 || c.Timings.Blocked != -1 || c.PageRef != "page_2" {
		t.Errorf("from the memory cache: %+v", c)
	}
	// Every array HAR requires is there, even when empty.
	data, _ := json.Marshal(h)
	for _, key := range []string{`"cookies":[]`, `"queryString":[]`, `"cache":{}`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("no %s in %s", key, data)
		}
	}
}

// TestNetworkSince: the requests after a mark across documents, and how
// many of those given out since are no longer kept.
func TestNetworkSince(t *testing.T) {
	f := newFakeDoc()
	f.feed(navSent("L1"), navigated("L1"), sent("a", "L1", network.ResourceTypeFetch, "http://x/a"))
	mark := f.net.LastReqID()
	if mark != 2 {
		t.Fatalf("mark %d, want 2", mark)
	}
	f.feed(sent("b", "L1", network.ResourceTypeFetch, "http://x/b"))
	for i := range PreservedDocuments + 1 {
		l := fmt.Sprintf("N%d", i)
		f.feed(navSent(l), navigated(l), sent("c"+l, cdp.LoaderID(l).String(), network.ResourceTypeFetch, "http://x/c"+l))
	}
	reqs, lost, _ := f.net.Since(mark)
	// b went with document L1, past the documents kept.
	if lost != 1 {
		t.Errorf("lost %d, want 1 (b)", lost)
	}
	if len(reqs) != 2*(PreservedDocuments+1) || reqs[0].URL != "http://x/N0" {
		var urls []string
		for _, r := range reqs {
			urls = append(urls, r.URL)
		}
		t.Errorf("since the mark: %v", urls)
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].ID <= reqs[i-1].ID {
			t.Errorf("not in reqid order: %d after %d", reqs[i].ID, reqs[i-1].ID)
		}
	}
	if all, lost, _ := f.net.Since(f.net.LastReqID()); len(all) != 0 || lost != 0 {
		t.Errorf("since the last reqid: %d requests, %d lost", len(all), lost)
	}
}
