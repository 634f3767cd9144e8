package browser

import "testing"

func TestLocal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want bool
	}{
		{Config{}, true},
		{Config{BrowserURL: "http://127.0.0.1:9222"}, true},
		{Config{WSEndpoint: "ws://localhost:9222/devtools/browser/x"}, true},
		{Config{BrowserURL: "http://[::1]:9222", Pool: []string{"http://127.0.0.2:9222"}}, true},
		{Config{BrowserURL: "http://127.0.0.1:9222", Pool: []string{"http://10.0.0.7:9222"}}, false},
		{Config{WSEndpoint: "ws://chrome.internal:9222/devtools/browser/x"}, false},
		{Config{BrowserURL: "http://%zz"}, false},
	} {
		if got := tc.cfg.Local(); got != tc.want {
			t.Errorf("%+v: Local() = %v, want %v", tc.cfg, got, tc.want)
		}
	}
}
