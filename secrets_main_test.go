package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestSecretsBinary: raw JSON-RPC lines to the binary with --secrets: a
// name typed into a page that echoes it in its title, its log and a
// request reaches the page as the value, and neither stdout (every answer)
// nor stderr (the debug log) shows it.
func TestSecretsBinary(t *testing.T) {
	t.Parallel()
	const value = "hunter2 & more"
	got := make(chan string, 256)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/echo" {
			select {
			case got <- r.URL.Query().Get("v"):
			default:
			}
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Login</title><input aria-label=Password oninput="document.title = this.value; console.log('pw', this.value); fetch('/echo?v=' + encodeURIComponent(this.value))">`)
	}))
	defer site.Close()
	s := startServer(t, shortTmp(t), "--browser-url="+sharedChrome(t), "--secrets=testdata/secrets.env")
	s.call(2, "navigate_page", fmt.Sprintf(`{"url":%q}`, site.URL))
	s.answer(2)
	s.call(3, "take_snapshot", `{}`)
	snap := s.answer(3)
	i := strings.Index(snap, `textbox \"Password\"`)
	if i < 0 {
		t.Fatalf("no textbox in %s", snap)
	}
	uid := snap[strings.LastIndex(snap[:i], "uid=")+4 : i-1]
	s.call(4, "fill", fmt.Sprintf(`{"uid":%q,"value":"${SITE_PASSWORD}"}`, uid))
	answers := []string{s.answer(4)}
	for v := ""; v != value; {
		select {
		case v = <-got:
		case <-time.After(time.Minute):
			t.Fatalf("the page did not get the secret's value; the last it sent was %q", v)
		}
	}
	for id, call := range []string{
		`"evaluate_script","arguments":{"function":"() => document.title"}`,
		`"list_console_messages","arguments":{}`,
		`"list_pages","arguments":{}`,
		`"list_network_requests","arguments":{}`,
	} {
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%s}}`, 10+id, call))
		answers = append(answers, s.answer(10+id))
	}
	all := strings.Join(answers, "\n")
	if !strings.Contains(all, "${SITE_PASSWORD}") {
		t.Errorf("no answer shows ${SITE_PASSWORD}:\n%s", all)
	}
	for _, leak := range []string{value, url.QueryEscape(value), "hunter2"} {
		if strings.Contains(all, leak) || strings.Contains(s.stderr.String(), leak) {
			t.Errorf("%q shows on stdout or stderr:\n%s", leak, all)
		}
	}
}
