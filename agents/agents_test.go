package agents

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestOwnedPages(t *testing.T) {
	r := New(Owned)
	lead, sub := Agent{ID: "session:a"}, Agent{ID: "session:b"}
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
	if err := r.Check(sub, 9); err != nil {
		t.Errorf("a page of no one: %v", err)
	}
	r.PageClosed(3)
	if r.Selected(lead) != 0 {
		t.Errorf("lead still has closed page %d selected", r.Selected(lead))
	}
	if got := r.Leave(lead); !slices.Equal(got, []int{5}) {
		t.Errorf("lead left with pages %v, want [5]", got)
	}
	if err := r.Check(sub, 5); err != nil {
		t.Errorf("a departed agent's page is no one's: %v", err)
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
