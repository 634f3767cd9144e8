package main

import (
	"github.com/pagemux/pagemux/internal/mcptest"
	"strings"
	"testing"
)

// Two pagemux processes with --own-context on one Chrome: each lists only
// its own tab, and one that is SIGKILLed, with no chance to close anything,
// takes its tabs with it (Chrome disposes of a context whose connection
// dropped), while the other serves on.
func TestOwnContextKilledServer(t *testing.T) {
	t.Parallel()
	chrome := debuggableChrome(t)
	site := pathSite(t)
	a := startServer(t, t.TempDir(), "--browser-url="+chrome, "--own-context")
	b := startServer(t, t.TempDir(), "--browser-url="+chrome, "--own-context")
	a.call(3, "new_page", `{"url":"`+site.URL+`/tenant-a"}`)
	b.call(3, "new_page", `{"url":"`+site.URL+`/tenant-b"}`)
	if got := a.answer(3); !strings.Contains(got, "/tenant-a") || strings.Contains(got, "/tenant-b") {
		t.Fatalf("a's pages after its new_page:\n%s", got)
	}
	if got := b.answer(3); !strings.Contains(got, "/tenant-b") || strings.Contains(got, "/tenant-a") {
		t.Fatalf("b's pages after its new_page:\n%s", got)
	}
	has := func(path string) bool {
		for _, tab := range chromeTabs(t, chrome) {
			if strings.HasSuffix(tab.URL, path) {
				return true
			}
		}
		return false
	}
	if !has("/tenant-a") || !has("/tenant-b") {
		t.Fatalf("Chrome's tabs before the kill: %+v", chromeTabs(t, chrome))
	}
	a.cmd.Process.Kill()
	mcptest.WaitFor(t, "a's tab gone once a was killed", func() bool { return !has("/tenant-a") })
	if !has("/tenant-b") {
		t.Fatal("b's tab went with a's")
	}
	b.call(4, "list_pages", `{}`)
	if got := b.answer(4); !strings.Contains(got, "/tenant-b") {
		t.Fatalf("b after a was killed:\n%s", got)
	}
}
