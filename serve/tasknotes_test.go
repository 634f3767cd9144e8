package serve

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
)

// A session's streams pass on the status events of the tasks it sees and
// every other message, and drop the status events of the others' tasks.
func TestTaskNotesFiltered(t *testing.T) {
	h := &httpHandler{opts: HTTPOptions{SeesTask: func(_ context.Context, session, id string) bool {
		return session == "s1" && id == "mine"
	}}}
	rec := httptest.NewRecorder()
	w := h.filterTaskNotes(t.Context(), rec, "s1")
	event := func(data string) string { return "event: message\ndata: " + data + "\n\n" }
	mine := event(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"mine","status":"completed"}}`)
	theirs := event(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"theirs","status":"working"}}`)
	bad := event(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":`)
	progress := event(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`)
	for _, e := range []string{mine, theirs, bad, progress} {
		if n, err := w.Write([]byte(e)); n != len(e) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if got := rec.Body.String(); got != mine+progress {
		t.Errorf("the stream carried:\n%s", got)
	}
	if strings.Contains(rec.Body.String(), "theirs") {
		t.Error("another session's task went through")
	}
	// Without SeesTask, or without a session, nothing is filtered.
	if w := (&httpHandler{}).filterTaskNotes(t.Context(), rec, "s1"); w != rec {
		t.Error("no SeesTask: the writer was wrapped")
	}
	if w := h.filterTaskNotes(t.Context(), rec, ""); w != rec {
		t.Error("no session: the writer was wrapped")
	}
}
