package browser

import (
	"slices"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
)

// fakeDoc drives collectors without Chrome: it bumps the generation on a
// main-frame navigation before the collectors see it, as Page.track does.
type fakeDoc struct {
	gen    uint64
	closed bool
	url    string
	net    *Network
	con    *Console
	fn     func(ev any)
}

const fakeMain cdp.FrameID = "MAIN"

func newFakeDoc() *fakeDoc {
	f := &fakeDoc{url: "about:blank"}
	d := docSource{main: fakeMain, gen: func() uint64 { return f.gen }, closed: func() bool { return f.closed }, url: func() string { return f.url }}
	f.net = newNetwork(d)
	f.con = newConsole(d, f.net)
	f.fn = feedCollectors(d, f.net, f.con)
	return f
}

// feed hands the events to the collectors in order, like the page's loop.
func (f *fakeDoc) feed(evs ...any) {
	for _, ev := range evs {
		if nav, ok := ev.(*page.EventFrameNavigated); ok && nav.Frame.ParentID == "" {
			f.gen++
		}
		f.fn(ev)
	}
}

// navigated is the main frame committing the document of loader.
func navigated(loader string) *page.EventFrameNavigated {
	return &page.EventFrameNavigated{Frame: &cdp.Frame{ID: fakeMain, LoaderID: cdp.LoaderID(loader), URL: "http://x/" + loader}}
}

func TestRing(t *testing.T) {
	var dropped []int
	r := newRing(0, 3, 2, func(v int) { dropped = append(dropped, v) })
	add := func(gen uint64, v int) int { return r.add(gen, func(int) int { return v }) }
	values := func(preserved bool) []int { vs, _ := r.list(preserved); return vs }

	if id := add(0, 10); id != 1 {
		t.Fatalf("first id %d, want 1", id)
	}
	add(0, 11)
	r.navigate(1)
	add(1, 20)
	if id := add(0, 12); id != 4 {
		t.Fatalf("a late record of document 0 got id %d, want 4", id)
	}
	if got := values(false); !slices.Equal(got, []int{20}) {
		t.Fatalf("current %v, want [20]", got)
	}
	if got := values(true); !slices.Equal(got, []int{10, 11, 12, 20}) {
		t.Fatalf("preserved %v, want document 0 then 1", got)
	}
	// Overflow drops the oldest of that bucket and counts it.
	add(1, 21)
	add(1, 22)
	add(1, 23)
	if got, info := r.list(false); !slices.Equal(got, []int{21, 22, 23}) || info.Dropped != 1 {
		t.Fatalf("after overflow %v dropped %d, want [21 22 23] and 1", got, info.Dropped)
	}
	if v, gen, ok := r.get(4); !ok || v != 12 || gen != 0 {
		t.Fatalf("get(4) = %d %d %v, want the late record in document 0", v, gen, ok)
	}
	if _, _, ok := r.get(3); ok {
		t.Fatal("get(3) found the record the overflow dropped")
	}
	// keep 2: a third document evicts the first.
	r.navigate(2)
	if id := add(0, 13); id != 0 {
		t.Fatalf("a record of an evicted document got id %d, want it dropped", id)
	}
	if _, _, ok := r.get(1); ok {
		t.Fatal("get(1) found a record of an evicted document")
	}
	if !r.issued(1) || r.issued(99) || r.issued(0) {
		t.Fatal("issued is wrong")
	}
	if !slices.Equal(dropped, []int{20, 10, 11, 12}) {
		t.Fatalf("onDrop saw %v, want the overflow then the evicted document", dropped)
	}
	// Ids never repeat.
	if id := add(2, 30); id != 8 {
		t.Fatalf("id %d after 7 issued, want 8", id)
	}
}

func TestRingMove(t *testing.T) {
	r := newRing[string](0, 10, 4, nil)
	for _, v := range []string{"a", "nav", "b"} {
		r.add(0, func(int) string { return v })
	}
	r.navigate(1)
	r.add(1, func(int) string { return "c" })
	r.move(0, 1, func(v string) bool { return v == "nav" })
	got, _ := r.list(false)
	if !slices.Equal(got, []string{"nav", "c"}) {
		t.Fatalf("current %v, want the moved record first, by id", got)
	}
	if v, gen, ok := r.get(2); !ok || v != "nav" || gen != 1 {
		t.Fatalf("get(2) = %q %d %v, want nav in document 1", v, gen, ok)
	}
}
