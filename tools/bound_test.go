package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// The error of a call past its bound claims only what pagemux knows: a
// script terminated when Chrome answered that, a page usable when Chrome
// answered the check; on a Chrome that did not answer it says so, and what
// to do next.
func TestBoundErrorSaysWhatIsKnown(t *testing.T) {
	t.Parallel()
	script := func(f browser.ScriptFate) *browser.AbandonedScriptError {
		return &browser.AbandonedScriptError{Page: 3, Fate: f}
	}
	noAnswer := fmt.Errorf("%w pagemux's check within 3s; the check goes on", browser.ErrNoAnswer)
	frozen := fmt.Errorf("%w: it sent nothing on its pipe for 2s; pagemux killed it", browser.ErrUnresponsive)
	for _, tc := range []struct {
		name      string
		err       boundError
		want, not []string
	}{
		{"terminated", boundError{page: 3, script: script(browser.ScriptTerminated)},
			[]string{"its script in page 3 was terminated", "its locks were released and the page can be used again", "--tool-timeout"}, nil},
		{"not started", boundError{page: 3, script: script(browser.ScriptNotStarted)},
			[]string{"had not started", "can be used again"}, []string{"terminated"}},
		{"termination unanswered", boundError{page: 3, script: script(browser.ScriptUnanswered)},
			[]string{"did not answer", "may stay busy"}, []string{"was terminated", "can be used again"}},
		{"other page tool", boundError{tool: "wait_for", page: 3},
			[]string{"stopped waiting for its work on page 3", "can be used again"}, []string{"terminated"}},
		{"browser tool", boundError{tool: "new_page"},
			[]string{"stopped waiting for it", "its locks were released"}, []string{"page can be used", "terminated"}},
		{"chrome did not answer", boundError{page: 3, script: script(browser.ScriptNotStarted), chrome: noAnswer},
			[]string{"Chrome did not answer", "Call again", "gets a new Chrome"}, []string{"terminated", "can be used again", "had not started"}},
		{"chrome stopped responding", boundError{page: 3, script: script(browser.ScriptTerminated), chrome: frozen},
			[]string{"Chrome stopped responding", "pagemux killed it"}, []string{"was terminated", "can be used again"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.err
			if e.tool == "" {
				e.tool = "evaluate_script"
			}
			e.bound, e.checked = 5*time.Second, true
			text := errorText(&e)
			mustContain(t, text, append(tc.want, "ran past its 5s limit (--tool-timeout)")...)
			for _, s := range tc.not {
				if strings.Contains(text, s) {
					t.Errorf("%q says %q", text, s)
				}
			}
			if !errors.Is(&e, context.DeadlineExceeded) {
				t.Error("not a context.DeadlineExceeded")
			}
			if errors.Is(&e, browser.ErrUnresponsive) != (tc.err.chrome == frozen) {
				t.Errorf("errors.Is(ErrUnresponsive) is %v", errors.Is(&e, browser.ErrUnresponsive))
			}
		})
	}
	// The context's cause, before the call ended and Chrome was checked,
	// claims nothing either.
	unchecked := &boundError{tool: "evaluate_script", bound: time.Second, page: 3}
	if text := unchecked.Error(); strings.Contains(text, "terminated") || strings.Contains(text, "can be used") {
		t.Errorf("the unchecked cause says %q", text)
	}
}
