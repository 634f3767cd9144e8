package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go tells every session of every task's status change
// (notifications/tasks/status, to all clients): over HTTP, that would tell
// each agent the ids and the comings and goings of the others' tasks. The
// streams of a session pass on only the notifications of the tasks its
// agent may see (HTTPOptions.SeesTask); the others are dropped.

// taskNoteWriter drops the task status events that its session may not
// see. mcp-go writes each event of a stream in one Write.
type taskNoteWriter struct {
	http.ResponseWriter
	sees func(taskID string) bool
}

// taskStatusMethod is how the method appears in an event's JSON.
var taskStatusMethod = []byte(`"method":"` + string(mcp.MethodNotificationTasksStatus) + `"`)

func (w *taskNoteWriter) Write(b []byte) (int, error) {
	if bytes.Contains(b, taskStatusMethod) && !w.seen(b) {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// seen reports whether the task status event b is of a task w's session
// may see. An event it cannot read is dropped.
func (w *taskNoteWriter) seen(b []byte) bool {
	_, data, ok := bytes.Cut(b, []byte("data: "))
	if !ok {
		data = b // a JSON body
	}
	var n struct {
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	return json.Unmarshal(bytes.TrimSpace(data), &n) == nil && n.Params.TaskID != "" && w.sees(n.Params.TaskID)
}

// Flush lets event streams through as they come.
func (w *taskNoteWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap serves http.ResponseController.
func (w *taskNoteWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// filterTaskNotes wraps w, the response to a request of session, unless
// the server sees every task.
func (h *httpHandler) filterTaskNotes(ctx context.Context, w http.ResponseWriter, session string) http.ResponseWriter {
	if h.opts.SeesTask == nil || session == "" {
		return w
	}
	return &taskNoteWriter{ResponseWriter: w, sees: func(id string) bool { return h.opts.SeesTask(ctx, session, id) }}
}
