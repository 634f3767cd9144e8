package agents

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestOwnedPages(t *testing.T) {
	r := New(Owned)
	lead, _ := r.Arrive(Agent{ID: "session:a", Session: "a"})
	sub, _ := r.Arrive(Agent{ID: "session:b", Session: "b"})
	r.Own(lead, 3)
	r.Own(sub, 4)
	r.Inherit(5, 3) // a tab lead's page opened
	if r.Selected(lead) != 3 || r.Selected(sub) != 4 {
		t.Errorf("selected: lead %d, sub %d", r.Selected(lead), r.Selected(sub))
	}
	var notYours *ErrNotYours
	if err := r.Check(sub, 3); !errors.As(err, &notYours) || notYours.Page != 3 {
		t.Errorf("sub on lead's page: %v", err)
	}
	if err := r.Check(sub, 5); err == nil {
		t.Error("sub may use the tab lead's page opened")
	}
	var notOpened *ErrNotOpened
	if err := r.Check(sub, 9); !errors.As(err, &notOpened) || r.Visible(sub, 9) {
		t.Errorf("a page of no one: %v; listed: %v", err, r.Visible(sub, 9))
	}
	if !r.Visible(lead, 5) || r.Visible(sub, 5) {
		t.Error("listed: a page to its owner, not to another agent")
	}
	r.PageClosed(3)
	if r.Selected(lead) != 0 {
		t.Errorf("lead still has closed page %d selected", r.Selected(lead))
	}
	if a, got := r.Leave("a"); a.ID != lead.ID || !slices.Equal(got, []int{5}) {
		t.Errorf("lead left with pages %v, want [5]", got)
	}
	if err := r.Check(sub, 5); !errors.As(err, &notOpened) {
		t.Errorf("a departed agent's page is no one's, and no one may use it: %v", err)
	}
	if r.Agents() != 1 {
		t.Errorf("%d agents after one left", r.Agents())
	}
}

func TestSharedPages(t *testing.T) {
	r := New(Shared)
	r.Own(Agent{ID: "token:lead"}, 1)
	if err := r.Check(Agent{ID: "token:sub"}, 1); err != nil {
		t.Errorf("shared mode refused: %v", err)
	}
}

func TestAgentContext(t *testing.T) {
	if _, ok := From(context.Background()); ok {
		t.Error("an agent in a bare context")
	}
	a := Agent{ID: "token:x", Token: "x"}
	if got, ok := From(With(context.Background(), a)); !ok || got != a || !got.Named() {
		t.Errorf("From(With(a)) = %+v, %v", got, ok)
	}
	if (Agent{ID: Anonymous}).Named() {
		t.Error("the anonymous agent is named")
	}
	if _, err := ParseMode("mine"); err == nil {
		t.Error("ParseMode took an unknown mode")
	}
}

// TestTakeover: a new session of a named identity takes over its pages and
// fences the old session: its bound calls end with *ErrTakenOver, it can no
// longer act, and its end leaves the pages to the new one. Another identity
// never gets them.
func TestTakeover(t *testing.T) {
	r := New(Owned)
	old, took := r.Arrive(Agent{ID: Identity("team", "", "s1"), Token: "team", Session: "s1"})
	if took != nil || old.Gen != 1 || old.ID != "token:team" {
		t.Fatalf("first session: %+v, took over %v", old, took)
	}
	r.Own(old, 7)
	ctx, stop, err := r.Bind(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	other, _ := r.Arrive(Agent{ID: Identity("sub", "", "s9"), Token: "sub", Session: "s9"})
	if err := r.Check(other, 7); err == nil {
		t.Error("another identity may use the page")
	}
	if ctx.Err() != nil {
		t.Error("another identity's session ended the first one")
	}

	cur, took := r.Arrive(Agent{ID: Identity("team", "", "s2"), Token: "team", Session: "s2"})
	if took == nil || cur.Gen != 2 || took.Gen != 1 || took.By != 2 {
		t.Fatalf("second session: %+v, took over %+v", cur, took)
	}
	<-ctx.Done()
	var fenced *ErrTakenOver
	if !errors.As(context.Cause(ctx), &fenced) {
		t.Errorf("the old session's call ended with %v", context.Cause(ctx))
	}
	if !errors.As(r.Current(old), &fenced) || r.Current(cur) != nil {
		t.Errorf("current: old %v, new %v", r.Current(old), r.Current(cur))
	}
	if _, _, err := r.Bind(context.Background(), old); !errors.As(err, &fenced) {
		t.Errorf("a new call of the old session: %v", err)
	}
	if again, _ := r.Arrive(Agent{ID: "token:team", Session: "s1"}); again.Gen != 1 {
		t.Errorf("the old session came back as generation %d", again.Gen)
	}
	if err := r.Check(cur, 7); err != nil || !slices.Equal(r.Pages(cur), []int{7}) {
		t.Errorf("the new session lacks the page: %v %v", err, r.Pages(cur))
	}
	if a, pages := r.Leave("s1"); a.ID != "" || pages != nil {
		t.Errorf("the old session's end took %v %v", a, pages)
	}
	if !slices.Equal(r.Pages(cur), []int{7}) {
		t.Error("the old session's end took the page")
	}
	ctx2, stop2, _ := r.Bind(context.Background(), cur)
	defer stop2()
	if a, pages := r.Leave("s2"); a.ID != "token:team" || !slices.Equal(pages, []int{7}) {
		t.Errorf("the new session left with %v %v", a, pages)
	}
	<-ctx2.Done()
	if !errors.Is(context.Cause(ctx2), ErrEnded) || !errors.Is(r.Current(cur), ErrEnded) {
		t.Errorf("after leaving: %v, %v", context.Cause(ctx2), r.Current(cur))
	}
	if r.Own(cur, 8) {
		t.Error("a session that left owns a new page")
	}
}

func TestIdentity(t *testing.T) {
	for _, tt := range []struct{ token, name, session, want string }{
		{"team", "", "s", "token:team"},
		{"team", "a", "s", "token:team/agent:a"},
		{"", "a", "s", "agent:a"},
		{"", "", "s", "session:s"},
		{"", "", "", Anonymous},
	} {
		if got := Identity(tt.token, tt.name, tt.session); got != tt.want {
			t.Errorf("Identity(%q, %q, %q) = %q, want %q", tt.token, tt.name, tt.session, got, tt.want)
		}
	}
}

// TestPageBound: Reserve refuses a page past LimitPages, counting pages
// being opened; a popup past it is reported over and told in the owner's
// next notes, once.
func TestPageBound(t *testing.T) {
	r := New(Owned)
	r.LimitPages(2)
	a := Agent{ID: "token:a", Token: "a"}
	done1, err := r.Reserve(a)
	if err != nil {
		t.Fatal(err)
	}
	done2, err := r.Reserve(a)
	if err != nil {
		t.Fatal(err)
	}
	var tooMany *ErrTooManyPages
	if _, err := r.Reserve(a); !errors.As(err, &tooMany) || tooMany.Open != 2 || !strings.Contains(err.Error(), "close_page") {
		t.Errorf("a third page being opened: %v", err)
	}
	r.Own(a, 1)
	done1()
	done1() // twice changes nothing
	done2() // failed to open
	if over := r.Inherit(2, 1); over {
		t.Error("a popup within the bound is over")
	}
	if r.TakeNotes(a) != nil {
		t.Error("notes without a closed popup")
	}
	if over := r.Inherit(3, 1); !over {
		t.Error("a popup past the bound is not over")
	}
	if over := r.Inherit(3, 1); over {
		t.Error("a popup inherited twice is over twice")
	}
	if notes := r.TakeNotes(a); len(notes) != 1 || !strings.Contains(notes[0], "popup 3") || !strings.Contains(notes[0], "--max-pages-per-agent 2") {
		t.Errorf("notes: %q", notes)
	}
	if r.TakeNotes(a) != nil {
		t.Error("notes told twice")
	}
	if _, err := r.Reserve(Agent{ID: "token:b"}); err != nil {
		t.Errorf("another agent's bound: %v", err)
	}
	if r.Inherit(9, 8) {
		t.Error("a popup of a page of no one is over")
	}
	if _, ok := r.Owner(9); ok {
		t.Error("a popup of a page of no one has an owner")
	}
}

// TestKeepPages: with KeepPages an agent's pages stay its identity's when
// it leaves, for its next session, and no one else's.
func TestKeepPages(t *testing.T) {
	r := New(Owned)
	r.KeepPages(true)
	a, _ := r.Arrive(Agent{ID: "token:a", Token: "a", Session: "s1"})
	r.Own(a, 4)
	if _, pages := r.Leave("s1"); !slices.Equal(pages, []int{4}) {
		t.Errorf("left with %v", pages)
	}
	if err := r.Check(Agent{ID: "token:b"}, 4); err == nil {
		t.Error("another agent may use a kept page")
	}
	next, _ := r.Arrive(Agent{ID: "token:a", Token: "a", Session: "s2"})
	if err := r.Check(next, 4); err != nil || !slices.Equal(r.Pages(next), []int{4}) {
		t.Errorf("the next session lacks the kept page: %v %v", err, r.Pages(next))
	}
}
