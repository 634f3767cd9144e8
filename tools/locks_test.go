package tools

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/pagelock"
)

// TestLocksResource: pagemux://locks shows the holder of a busy page and
// the calls waiting behind it, in order, and reading it waits for nothing.
func TestLocksResource(t *testing.T) {
	t.Parallel()
	e := leaseEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64}, Options{})
	page := e.openPage(t, "/form.html")
	slow := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": page, "function": sleepJS(2000)})
	e.waitHeld(t, pagelock.PageKey(page))
	behind := e.async(t.Context(), "take_snapshot", map[string]any{"pageId": page})
	e.waitQueued(t, pagelock.PageKey(page), 1)
	res, err := e.client.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "pagemux://locks"}})
	if err != nil {
		t.Fatal(err)
	}
	var locks []LockState
	if err := json.Unmarshal([]byte(res.Contents[0].(mcp.TextResourceContents).Text), &locks); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range locks {
		if l.Lock == fmt.Sprintf("page %d", page) {
			found = true
			if l.Holder != fmt.Sprintf("evaluate_script on page %d", page) || len(l.Waiting) != 1 || l.Waiting[0] != fmt.Sprintf("take_snapshot on page %d", page) {
				t.Errorf("page %d: %+v", page, l)
			}
		}
	}
	if !found {
		t.Errorf("no page %d in %+v", page, locks)
	}
	must(t, <-slow)
	must(t, <-behind)
}
