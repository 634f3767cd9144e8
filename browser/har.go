package browser

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/network"
)

// A HAR (HTTP Archive 1.2, http://www.softwareishard.com/blog/har-12-spec/)
// of a page's requests, made from what the network collector keeps
// (collect_network.go) and the bodies Chrome still holds. Fields that start
// with an underscore are the custom fields Chrome DevTools writes, where it
// writes them, and reads back when it imports a HAR (_resourceType and
// _fromCache of an entry, _transferSize and _error of its response), plus
// pagemux's _reqid.

// HAR is a HAR file's one object.
type HAR struct {
	Log HARLog `json:"log"`
}

// HARLog is the archive: who made it, the documents and the requests.
type HARLog struct {
	Version string     `json:"version"`
	Creator HARCreator `json:"creator"`
	Pages   []HARPage  `json:"pages"`
	Entries []HAREntry `json:"entries"`
	Comment string     `json:"comment,omitempty"`
}

// HARCreator names the program that wrote the archive.
type HARCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Comment string `json:"comment,omitempty"`
}

// HARPage is one document of the page: entries name it by pageref.
type HARPage struct {
	StartedDateTime string         `json:"startedDateTime"`
	ID              string         `json:"id"`
	Title           string         `json:"title"`
	PageTimings     HARPageTimings `json:"pageTimings"`
}

// HARPageTimings are a document's load times; pagemux does not record them
// (-1).
type HARPageTimings struct {
	OnContentLoad float64 `json:"onContentLoad"`
	OnLoad        float64 `json:"onLoad"`
}

// HAREntry is one request and its response: one hop of a redirect chain.
type HAREntry struct {
	PageRef         string      `json:"pageref,omitempty"`
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"`
	Request         HARRequest  `json:"request"`
	Response        HARResponse `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         HARTimings  `json:"timings"`
	ServerIPAddress string      `json:"serverIPAddress,omitempty"`
	Connection      string      `json:"connection,omitempty"`
	Comment         string      `json:"comment,omitempty"`

	ResourceType string `json:"_resourceType"`
	// FromCache is "memory" or "disk" for an answer from Chrome's cache.
	FromCache string `json:"_fromCache,omitempty"`
	ReqID     int    `json:"_reqid"`
}

// HARRequest is what the page sent.
type HARRequest struct {
	Method      string         `json:"method"`
	URL         string         `json:"url"`
	HTTPVersion string         `json:"httpVersion"`
	Cookies     []HARCookie    `json:"cookies"`
	Headers     []HARNameValue `json:"headers"`
	QueryString []HARNameValue `json:"queryString"`
	PostData    *HARPostData   `json:"postData,omitempty"`
	HeadersSize int64          `json:"headersSize"`
	BodySize    int64          `json:"bodySize"`
}

// HARResponse is what came back; a request that failed before an answer
// has status 0 and its error in the entry's _error.
type HARResponse struct {
	Status      int64          `json:"status"`
	StatusText  string         `json:"statusText"`
	HTTPVersion string         `json:"httpVersion"`
	Cookies     []HARCookie    `json:"cookies"`
	Headers     []HARNameValue `json:"headers"`
	Content     HARContent     `json:"content"`
	RedirectURL string         `json:"redirectURL"`
	HeadersSize int64          `json:"headersSize"`
	BodySize    int64          `json:"bodySize"`
	// TransferSize is the bytes received, headers included; Error is
	// Chrome's net::ERR_… of a request that failed.
	TransferSize int64  `json:"_transferSize"`
	Error        string `json:"_error,omitempty"`
}

// HARNameValue is a header or a query parameter.
type HARNameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HARCookie is a cookie sent (Cookie) or set (Set-Cookie).
type HARCookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Path     string `json:"path,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Expires  string `json:"expires,omitempty"`
	HTTPOnly bool   `json:"httpOnly,omitempty"`
	Secure   bool   `json:"secure,omitempty"`
}

// HARPostData is a request's body.
type HARPostData struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Comment  string `json:"comment,omitempty"`
}

// HARContent is a response's body: Text is the body (base64 when Encoding
// says so), cut at the cap; Size is the whole body's length when known.
type HARContent struct {
	Size     int64  `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text,omitempty"`
	Encoding string `json:"encoding,omitempty"`
	Comment  string `json:"comment,omitempty"`
}

// HARTimings are the phases of a request in milliseconds. Blocked, DNS,
// Connect and SSL are -1 where they do not apply or are unknown (a reused
// connection, a cached answer); Send, Wait and Receive, which HAR requires
// to be non-negative, are 0 when unknown. SSL is part of Connect, as HAR says.
type HARTimings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	Connect float64 `json:"connect"`
	SSL     float64 `json:"ssl"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// HARBody is a body fetched for an entry, or why there is none.
type HARBody struct {
	// Data is the body, or its first bytes when Size says it was longer.
	Data []byte
	// Size is the whole body's length when Data holds less; 0 means
	// len(Data).
	Size int
	// Missing says why there is no body ("" when Data is it).
	Missing string
}

// size is the whole body's length.
func (b HARBody) size() int { return max(b.Size, len(b.Data)) }

// HAROptions say what a HAR holds.
type HAROptions struct {
	// Requests are the entries, oldest first (Network.List, Network.Since).
	Requests []Request
	// Content embeds the response bodies Chrome still holds; without it
	// responses carry none. Request bodies are always included.
	Content bool
	// MaxBody is the most bytes of one body kept; longer ones are cut,
	// with a comment saying so. Zero or less means DefaultHARMaxBody.
	MaxBody int
	// Creator names the program; Comment says what the archive lacks.
	Creator HARCreator
	Comment string
}

// DefaultHARMaxBody is the most bytes of one body a HAR keeps by default.
const DefaultHARMaxBody = 1 << 20

// MaxHARBodies bounds the bytes of bodies one HAR embeds in all: past it
// further bodies are left out, with a comment saying so, so that a page of
// many large resources cannot make an archive of gigabytes.
const MaxHARBodies = 64 << 20

// HARStats say what a HAR holds of the bodies asked for.
type HARStats struct {
	Entries int
	// Bodies counts the response bodies embedded, Truncated those cut.
	Bodies, Truncated int
	// Unavailable lists the reqids whose response body was asked for and
	// Chrome no longer held (or the URL policy refused), with why.
	Unavailable map[int]string
}

// HAR builds the archive of o.Requests, fetching bodies from Chrome while it
// still holds them. Call it holding the page's lock. A body Chrome no longer
// has is noted in its entry and in HARStats.Unavailable, not an error; a
// closed page, an open dialog or the end of ctx is.
func (cp Capture) HAR(ctx context.Context, o HAROptions) (*HAR, HARStats, error) {
	p := cp.p
	if err := p.Ready(ctx); err != nil {
		return nil, HARStats{}, err
	}
	maxBody := cmp.Or(max(o.MaxBody, 0), DefaultHARMaxBody)
	reqBodies, respBodies := map[int]HARBody{}, map[int]HARBody{}
	budget := MaxHARBodies
	for _, r := range o.Requests {
		if r.HasPostData {
			body, err := p.RequestBody(ctx, r)
			b, err := harBody(body, err, maxBody)
			if err != nil {
				return nil, HARStats{}, err
			}
			reqBodies[r.ID] = b
		}
		if !o.Content || r.Response == nil || r.RedirectTo != 0 {
			continue
		}
		b, err := cp.harResponseBody(ctx, r, &budget, maxBody)
		if err != nil {
			return nil, HARStats{}, err
		}
		respBodies[r.ID] = b
	}
	h, st := BuildHAR(o, reqBodies, respBodies)
	return h, st, nil
}

// harResponseBody fetches one response body within what is left of the
// budget, which it spends.
func (cp Capture) harResponseBody(ctx context.Context, r Request, budget *int, maxBody int) (HARBody, error) {
	p := cp.p
	if *budget <= 0 {
		return HARBody{Missing: fmt.Sprintf("left out: the HAR already holds %d MiB of bodies", MaxHARBodies>>20)}, nil
	}
	if err := p.refuseTarget(r.URL); err != nil {
		return HARBody{Missing: "not kept: " + err.Error()}, nil
	}
	body, err := p.ResponseBody(ctx, r)
	b, err := harBody(body, err, maxBody)
	if err != nil {
		return b, err
	}
	*budget -= len(b.Data)
	return b, nil
}

// harBody turns a body fetch's outcome into a HARBody, the body's first
// maxBody bytes (a copy: a long body is not kept whole while the others
// are fetched): ErrNoBody is a missing body, other errors stay errors.
func harBody(body []byte, err error, maxBody int) (HARBody, error) {
	switch {
	case err == nil && len(body) > maxBody:
		return HARBody{Data: bytes.Clone(body[:maxBody]), Size: len(body)}, nil
	case err == nil:
		return HARBody{Data: body}, nil
	case errors.Is(err, ErrNoBody):
		return HARBody{Missing: strings.TrimPrefix(err.Error(), ErrNoBody.Error()+": ")}, nil
	}
	return HARBody{}, err
}

// BuildHAR makes the archive of o.Requests with the bodies given by reqid;
// it sends no command. Entries whose response body is not in respBodies
// carry none, with no comment (the caller did not ask for it).
func BuildHAR(o HAROptions, reqBodies, respBodies map[int]HARBody) (*HAR, HARStats) {
	maxBody := cmp.Or(max(o.MaxBody, 0), DefaultHARMaxBody)
	h := &HAR{Log: HARLog{Version: "1.2", Creator: o.Creator, Comment: o.Comment, Pages: []HARPage{}, Entries: []HAREntry{}}}
	st := HARStats{Unavailable: map[int]string{}}
	clock := newWallClock(o.Requests)
	byID := map[int]Request{}
	for _, r := range o.Requests {
		byID[r.ID] = r
	}
	pages := map[uint64]bool{}
	for _, r := range o.Requests {
		ref := "page_" + strconv.FormatUint(r.Gen, 10)
		if !pages[r.Gen] {
			pages[r.Gen] = true
			h.Log.Pages = append(h.Log.Pages, harPage(ref, r.Gen, o.Requests, clock))
		}
		e := harEntry(r, clock)
		e.PageRef = ref
		e.Response.RedirectURL = redirectURL(r, byID)
		if b, ok := reqBodies[r.ID]; ok {
			e.Request.PostData = harPostData(r, b, maxBody)
			if b.Missing == "" {
				e.Request.BodySize = int64(b.size())
			}
		}
		if b, ok := respBodies[r.ID]; ok {
			st.count(r.ID, b, e.Response.Content.fill(b, maxBody))
		}
		h.Log.Entries = append(h.Log.Entries, e)
	}
	st.Entries = len(h.Log.Entries)
	return h, st
}

// count notes one response body's outcome.
func (st *HARStats) count(id int, b HARBody, truncated bool) {
	switch {
	case b.Missing != "":
		st.Unavailable[id] = b.Missing
	case truncated:
		st.Bodies++
		st.Truncated++
	default:
		st.Bodies++
	}
}

// harPage describes the document of gen: it started with its navigation
// request, when kept, else with its first request kept.
func harPage(ref string, gen uint64, reqs []Request, clock wallClock) HARPage {
	first := -1
	for i, r := range reqs {
		if r.Gen != gen {
			continue
		}
		if first < 0 {
			first = i
		}
		if r.Navigation && r.RedirectFrom == 0 {
			first = i
			break
		}
	}
	r := reqs[first]
	return HARPage{StartedDateTime: harTime(clock.at(r)), ID: ref, Title: r.URL,
		PageTimings: HARPageTimings{OnContentLoad: -1, OnLoad: -1}}
}

// harEntry makes the entry of one request, without bodies.
func harEntry(r Request, clock wallClock) HAREntry {
	t := harTimings(r)
	e := HAREntry{
		StartedDateTime: harTime(clock.at(r)),
		Time:            t.total(),
		Timings:         t,
		ResourceType:    strings.ToLower(string(r.Type)),
		ReqID:           r.ID,
	}
	e.Request = HARRequest{
		Method: r.Method, URL: r.URL, Cookies: requestCookies(r.Headers), Headers: harHeaders(r.Headers),
		QueryString: queryString(r.URL), HeadersSize: -1, BodySize: 0,
	}
	if r.HasPostData {
		e.Request.BodySize = int64(len(r.PostData))
	}
	e.Response = HARResponse{Cookies: []HARCookie{}, Headers: []HARNameValue{}, HeadersSize: -1, BodySize: -1,
		Content: HARContent{Size: -1, MimeType: "x-unknown"}, TransferSize: int64(r.EncodedLength), Error: r.Failure}
	if res := r.Response; res != nil {
		e.Request.HTTPVersion = httpVersion(res.Protocol)
		headers := responseHeaders(r)
		e.Response.Status, e.Response.StatusText, e.Response.HTTPVersion = res.Status, res.StatusText, httpVersion(res.Protocol)
		e.Response.Headers, e.Response.Cookies = harHeaders(headers), responseCookies(headers)
		e.Response.Content.MimeType = cmp.Or(res.MimeType, "x-unknown")
		e.ServerIPAddress = strings.Trim(res.RemoteIPAddress, "[]")
		if res.ConnectionID > 0 {
			e.Connection = strconv.FormatInt(int64(res.ConnectionID), 10)
		}
	} else if r.ExtraStatus > 0 {
		e.Response.Status = r.ExtraStatus
	}
	switch {
	case r.FromCache:
		e.FromCache, e.Response.BodySize = "memory", 0
	case r.Response != nil && r.Response.FromDiskCache:
		e.FromCache, e.Response.BodySize = "disk", 0
	}
	switch {
	case r.Failure != "":
		e.Comment = "failed: " + r.Failure
	case !r.Finished:
		e.Comment = "still loading when the HAR was saved"
	}
	return e
}

// fill puts a body into the content, cut at maxBody bytes; it reports
// whether it was cut.
func (c *HARContent) fill(b HARBody, maxBody int) (truncated bool) {
	if b.Missing != "" {
		c.Comment = "body not available: " + b.Missing
		return false
	}
	c.Size = int64(b.size())
	var kept int
	c.Text, c.Encoding, kept, truncated = bodyText(b, maxBody)
	if truncated {
		c.Comment = fmt.Sprintf("body cut to its first %d of %d bytes", kept, b.size())
	}
	return truncated
}

// harPostData is a request body as HAR carries it: text, or base64 with a
// comment (HAR's postData has no encoding field).
func harPostData(r Request, b HARBody, maxBody int) *HARPostData {
	pd := &HARPostData{MimeType: cmp.Or(headerValue(r.Headers, "Content-Type"), "application/octet-stream")}
	if b.Missing != "" {
		pd.Comment = "body not available: " + b.Missing
		return pd
	}
	text, enc, kept, cut := bodyText(b, maxBody)
	pd.Text = text
	var notes []string
	if enc != "" {
		notes = append(notes, "base64: the body is binary")
	}
	if cut {
		notes = append(notes, fmt.Sprintf("cut to its first %d of %d bytes", kept, b.size()))
	}
	pd.Comment = strings.Join(notes, "; ")
	return pd
}

// bodyText is a body as HAR text: as is when it is UTF-8, else base64 (its
// encoding); cut to maxBody bytes, a text at a character boundary. kept is
// how many bytes of the body the text holds.
func bodyText(b HARBody, maxBody int) (text, encoding string, kept int, truncated bool) {
	data := b.Data[:min(len(b.Data), maxBody)]
	truncated = b.size() > len(data)
	if utf8.Valid(data) {
		return string(data), "", len(data), truncated
	}
	if truncated {
		// The cut may have split the last character of a text.
		for i := 1; i < utf8.UTFMax && i < len(data); i++ {
			if utf8.Valid(data[:len(data)-i]) {
				return string(data[:len(data)-i]), "", len(data) - i, truncated
			}
		}
	}
	return base64.StdEncoding.EncodeToString(data), "base64", len(data), truncated
}

// harTimings maps Chrome's ResourceTiming (milliseconds from its
// requestTime, -1 for phases that did not happen) and the collector's
// timestamps to HAR's phases.
func harTimings(r Request) HARTimings {
	t := HARTimings{Blocked: -1, DNS: -1, Connect: -1, SSL: -1}
	start, answered, end := float64(r.Start), float64(r.ResponseAt), float64(r.End)
	var rt *network.ResourceTiming
	if r.Response != nil {
		rt = r.Response.Timing
	}
	if rt == nil || rt.RequestTime <= 0 {
		// No network timing: a cached or synthetic answer, or none yet.
		if answered > 0 {
			t.Wait = ms(answered - start)
		}
		if end > 0 {
			t.Receive = ms(end - max(answered, start))
		}
		return t
	}
	base := rt.RequestTime
	if first := firstPhase(rt); first >= 0 {
		t.Blocked = ms(base-start) + first
	}
	t.DNS = span(rt.DNSStart, rt.DNSEnd)
	t.Connect = span(rt.ConnectStart, rt.ConnectEnd)
	t.SSL = span(rt.SslStart, rt.SslEnd)
	t.Send = max(span(rt.SendStart, rt.SendEnd), 0)
	t.Wait = max(span(rt.SendEnd, rt.ReceiveHeadersEnd), 0)
	if end > 0 && rt.ReceiveHeadersEnd >= 0 {
		t.Receive = ms(end - (base + rt.ReceiveHeadersEnd/1000))
	}
	t.Blocked = round3(t.Blocked)
	return t
}

// firstPhase is when the first phase of the network began (DNS, connect or
// send), in ms from requestTime; -1 if none did.
func firstPhase(rt *network.ResourceTiming) float64 {
	first := -1.0
	for _, v := range []float64{rt.DNSStart, rt.ConnectStart, rt.SendStart} {
		if v >= 0 && (first < 0 || v < first) {
			first = v
		}
	}
	return first
}

// span is end-start in ms, -1 when the phase did not happen.
func span(start, end float64) float64 {
	if start < 0 || end < 0 {
		return -1
	}
	return round3(max(end-start, 0))
}

// ms turns seconds into milliseconds, not below zero: Chrome stamps events
// in different processes, so their order may be off by a little.
func ms(seconds float64) float64 { return round3(max(seconds*1000, 0)) }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// total is an entry's time: the sum of its phases that apply (SSL is part
// of Connect).
func (t HARTimings) total() float64 {
	sum := 0.0
	for _, v := range []float64{t.Blocked, t.DNS, t.Connect, t.Send, t.Wait, t.Receive} {
		if v > 0 {
			sum += v
		}
	}
	return round3(sum)
}

// wallClock turns Chrome's monotonic timestamps into wall times, for the
// requests whose event carried no wall time, from one that did.
type wallClock struct {
	mono float64
	wall time.Time
}

func newWallClock(reqs []Request) wallClock {
	for _, r := range reqs {
		if !r.Sent.IsZero() {
			return wallClock{mono: float64(r.Start), wall: r.Sent}
		}
	}
	return wallClock{wall: time.Now()}
}

// at is when the request started.
func (c wallClock) at(r Request) time.Time {
	if !r.Sent.IsZero() {
		return r.Sent
	}
	if c.mono == 0 || r.Start == 0 {
		return c.wall
	}
	return c.wall.Add(time.Duration((float64(r.Start) - c.mono) * float64(time.Second)))
}

// harTime is a time as HAR writes it: ISO 8601 with milliseconds.
func harTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// httpVersion names Chrome's protocol as HAR does (HTTP/1.1, HTTP/2).
func httpVersion(protocol string) string {
	switch strings.ToLower(protocol) {
	case "http/1.0":
		return "HTTP/1.0"
	case "http/1.1":
		return "HTTP/1.1"
	case "h2":
		return "HTTP/2"
	case "h3", "h3-29", "quic":
		return "HTTP/3"
	}
	return protocol
}

// redirectURL is where a redirect hop led: the next hop's URL when kept,
// else its Location header.
func redirectURL(r Request, byID map[int]Request) string {
	if r.RedirectTo == 0 {
		return ""
	}
	if next, ok := byID[r.RedirectTo]; ok {
		return next.URL
	}
	if r.Response != nil {
		return headerValue(responseHeaders(r), "Location")
	}
	return ""
}

// responseHeaders are the response headers as received when Chrome reported
// them raw, else as it parsed them.
func responseHeaders(r Request) network.Headers {
	if r.ResponseHeaders != nil || r.Response == nil {
		return r.ResponseHeaders
	}
	return r.Response.Headers
}

// harHeaders lists headers sorted by name; a value Chrome joined with
// newlines (a repeated header) gives one each.
func harHeaders(h network.Headers) []HARNameValue {
	out := []HARNameValue{}
	for _, name := range slices.Sorted(maps.Keys(h)) {
		for _, v := range strings.Split(fmt.Sprint(h[name]), "\n") {
			out = append(out, HARNameValue{Name: name, Value: v})
		}
	}
	return out
}

// headerValue is the first value of a header, by name in any case.
func headerValue(h network.Headers, name string) string {
	return strings.SplitN(sentHeader(h, name), "\n", 2)[0]
}

// queryString lists a URL's query parameters in their order.
func queryString(raw string) []HARNameValue {
	out := []HARNameValue{}
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return out
	}
	for _, part := range strings.Split(u.RawQuery, "&") {
		if part == "" {
			continue
		}
		name, value, _ := strings.Cut(part, "=")
		n, err1 := url.QueryUnescape(name)
		v, err2 := url.QueryUnescape(value)
		if err1 != nil || err2 != nil {
			n, v = name, value // as sent
		}
		out = append(out, HARNameValue{Name: n, Value: v})
	}
	return out
}

// requestCookies are the cookies of a Cookie header.
func requestCookies(h network.Headers) []HARCookie {
	out := []HARCookie{}
	cs, err := http.ParseCookie(headerValue(h, "Cookie"))
	if err != nil {
		return out
	}
	for _, c := range cs {
		out = append(out, HARCookie{Name: c.Name, Value: c.Value})
	}
	return out
}

// responseCookies are the cookies of the Set-Cookie headers.
func responseCookies(h network.Headers) []HARCookie {
	out := []HARCookie{}
	for k, v := range h {
		if !strings.EqualFold(k, "Set-Cookie") {
			continue
		}
		for _, line := range strings.Split(fmt.Sprint(v), "\n") {
			c, err := http.ParseSetCookie(line)
			if err != nil {
				continue
			}
			hc := HARCookie{Name: c.Name, Value: c.Value, Path: c.Path, Domain: c.Domain, HTTPOnly: c.HttpOnly, Secure: c.Secure}
			if !c.Expires.IsZero() {
				hc.Expires = harTime(c.Expires)
			}
			out = append(out, hc)
		}
	}
	return out
}

// LastReqID is the last reqid the page's collector gave out, 0 for none: a
// mark from which Since lists what came after.
func (n *Network) LastReqID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ring.lastID
}

// Since returns copies of the kept requests with a reqid past mark, of every
// kept document, oldest first; lost counts those given a reqid since mark
// that are no longer kept (dropped with old documents or past BucketCap),
// and info.Partial says a listed document began before recording did.
func (n *Network) Since(mark int) (reqs []Request, lost int, info Completeness) {
	n.mu.Lock()
	defer n.mu.Unlock()
	all, info := n.ring.list(true)
	for _, r := range all {
		if r.ID > mark {
			reqs = append(reqs, *r)
		}
	}
	slices.SortFunc(reqs, func(a, b Request) int { return a.ID - b.ID })
	lost = max(n.ring.lastID-mark-len(reqs), 0)
	return reqs, lost, Completeness{Dropped: lost, Partial: info.Partial}
}
