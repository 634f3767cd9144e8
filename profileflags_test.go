package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// TestProfileFlags: the flags of tool profiles, screenshots and idleness
// read what they say, refuse what they cannot, and --browser-idle defaults
// to off on stdio and 30m with --http.
func TestProfileFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		err  string
		want func(c profileConfig) bool
	}{
		{args: nil, want: func(c profileConfig) bool {
			return c.list == nil && !c.slim && c.max == browser.Size{Width: 2000, Height: 2000} && c.idle == 0 && c.images == "include"
		}},
		{args: []string{"--tools", "core,snapshot,-close_page"}, want: func(c profileConfig) bool {
			return strings.Join(c.list, ",") == "core,snapshot,-close_page"
		}},
		{args: []string{"--slim"}, want: func(c profileConfig) bool { return c.slim }},
		{args: []string{"--screenshot-max", "1280x0", "--screenshot-quality", "70", "--image-responses", "omit"}, want: func(c profileConfig) bool {
			return c.max == browser.Size{Width: 1280} && c.shotQuality == 70 && c.images == "omit"
		}},
		{args: []string{"--http", "127.0.0.1:0"}, want: func(c profileConfig) bool { return c.idle == 30*time.Minute }},
		{args: []string{"--http", "127.0.0.1:0", "--browser-idle", "0"}, want: func(c profileConfig) bool { return c.idle == 0 }},
		{args: []string{"--browser-idle", "90s"}, want: func(c profileConfig) bool { return c.idle == 90*time.Second }},
		{args: []string{"--tools", "core,scriptz"}, err: `"scriptz" is neither a tool nor a group`},
		{args: []string{"--tools", "core", "--slim"}, err: "--slim and --tools cannot be used together"},
		{args: []string{"--screenshot-max", "big"}, err: "want WxH in pixels"},
		{args: []string{"--screenshot-max", "-1x20"}, err: "want WxH in pixels"},
		{args: []string{"--screenshot-quality", "101"}, err: "want 1 to 100"},
		{args: []string{"--image-responses", "none"}, err: "want include or omit"},
		{args: []string{"--browser-idle", "-1m"}, err: "want a duration"},
	} {
		c, err := parseFlags(tt.args, &strings.Builder{})
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.err == "" && !tt.want(c.profile):
			t.Errorf("%v: read as %+v", tt.args, c.profile)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%v: got %v, want an error saying %q", tt.args, err, tt.err)
		}
	}
}
