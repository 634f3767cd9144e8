package browser

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A launched Chrome serves DevTools on a loopback port besides the pipe, and
// on no other interface; a relaunch gets an endpoint of its own.
func TestDevToolsURL(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	u, err := b.DevToolsURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme != "ws" || parsed.Hostname() != "127.0.0.1" || !strings.HasPrefix(parsed.Path, "/devtools/browser/") {
		t.Fatalf("DevToolsURL = %q (%v), want ws://127.0.0.1:PORT/devtools/browser/ID", u, err)
	}
	port, _ := strconv.Atoi(parsed.Port())
	if addrs := listeners(t, port); len(addrs) == 0 || slices.ContainsFunc(addrs, func(a string) bool { return a != "127.0.0.1" }) {
		t.Fatalf("port %d listens on %v, want 127.0.0.1 only", port, addrs)
	}
	res, err := http.Get("http://" + parsed.Host + "/json/version")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var version struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(res.Body).Decode(&version); err != nil || version.WebSocketDebuggerURL != u {
		t.Fatalf("/json/version says %q (%v), want %q", version.WebSocketDebuggerURL, err, u)
	}
	// pagemux itself still talks over the pipe.
	args, err := b.CommandLine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(args, "--remote-debugging-pipe") {
		t.Fatalf("command line lacks --remote-debugging-pipe: %v", args)
	}

	b.mu.Lock()
	proc := chromedp.FromContext(b.launch.rootCtx).Browser.Process()
	b.mu.Unlock()
	proc.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		again, err := b.DevToolsURL(t.Context())
		if err == nil && again != u {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a relaunch DevToolsURL = %q, %v; want a new endpoint", again, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An attached browser's endpoint is the address it was attached at.
func TestDevToolsURLAttached(t *testing.T) {
	t.Parallel()
	browserURL, _ := runningChrome(t)
	b := New(Config{BrowserURL: browserURL})
	defer b.Close()
	if u, err := b.DevToolsURL(t.Context()); err != nil || u != browserURL {
		t.Fatalf("DevToolsURL = %q, %v; want %q", u, err, browserURL)
	}
}

func TestParseDevToolsPortFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"41234\n/devtools/browser/abc-123\n", "ws://127.0.0.1:41234/devtools/browser/abc-123", true},
		{"41234\n", "", false}, // half written
		{"", "", false},
		{"0\n/devtools/browser/x\n", "", false},
		{"port\n/devtools/browser/x\n", "", false},
		{"41234\n/elsewhere\n", "", false},
	}
	for _, tt := range tests {
		got, err := parseDevToolsPortFile([]byte(tt.in))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseDevToolsPortFile(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// The DevTools flags go before the first page's URL, a stale port file goes,
// and the profile directory is found.
func TestPrepareCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stale := filepath.Join(dir, devToolsPortFile)
	os.WriteFile(stale, []byte("1\n/devtools/browser/old\n"), 0o644)
	cmd := exec.Command("chrome", "--headless", "--user-data-dir="+dir, "--remote-debugging-pipe", "about:blank")
	if got := prepareCommand(cmd); got != dir {
		t.Errorf("profile dir %q, want %q", got, dir)
	}
	want := []string{"chrome", "--headless", "--user-data-dir=" + dir, "--remote-debugging-pipe",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args %q, want %q", cmd.Args, want)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale %s still there: %v", devToolsPortFile, err)
	}
}

// listeners returns the local addresses that listen on a TCP port, from
// /proc/net/tcp and tcp6.
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var addrs []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			t.Skipf("no %s: %v", f, err)
		}
		s := bufio.NewScanner(file)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) < 4 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			host, p, ok := strings.Cut(fields[1], ":")
			if n, err := strconv.ParseUint(p, 16, 16); !ok || err != nil || int(n) != port {
				continue
			}
			addrs = append(addrs, procAddr(host))
		}
		file.Close()
	}
	return addrs
}

// procAddr reads an address as /proc/net/tcp writes it: hex, in host byte
// order, little-endian here.
func procAddr(hex string) string {
	if len(hex) != 8 {
		return "ipv6:" + hex
	}
	var b [4]byte
	for i := range b {
		n, _ := strconv.ParseUint(hex[2*i:2*i+2], 16, 8)
		b[3-i] = byte(n)
	}
	return strconv.Itoa(int(b[0])) + "." + strconv.Itoa(int(b[1])) + "." + strconv.Itoa(int(b[2])) + "." + strconv.Itoa(int(b[3]))
}
