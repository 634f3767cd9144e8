package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/proc"
)

// nobody is the user TestNormalUser runs pagemux as when the test runs as
// root (as it does in containers and CI).
const nobody = 65534

// TestNormalUser runs `pagemux --http` as a normal user, where that differs
// from root: Chrome keeps its sandbox (no --no-sandbox, no warning about
// root) and still works, it runs as that user, and the agent's files land
// in a private workspace of the user's own (mode 0700 up from the agent's
// directory). Run as root, the test runs pagemux as nobody; run as a normal
// user, as itself.
func TestNormalUser(t *testing.T) {
	t.Parallel()
	uid := os.Geteuid()
	dir := shortTmp(t)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	// The binary and TMPDIR where that user reaches them.
	bin := filepath.Join(dir, "pagemux")
	copyFile(t, pagemuxBinary(t), bin)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--http", addr, "--auth-token", "alice=alice-secret-1", "--log-level=info")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp}
	if uid == 0 {
		uid = nobody
		if err := os.Chown(tmp, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	base, stderr := startHTTPCommand(t, cmd, addr)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()

	alice := mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer alice-secret-1"}, "")
	mustCall(t, alice, "new_page", map[string]any{"url": site.URL + "/form.html"})
	if snap := mustCall(t, alice, "take_snapshot", nil); !strings.Contains(snap, "textbox") {
		t.Errorf("a sandboxed Chrome's snapshot:\n%s", snap)
	}
	shot := mustCall(t, alice, "take_screenshot", map[string]any{"filePath": "shot.png"})
	path := regexp.MustCompile(`(/\S+shot\.png)`).FindString(shot)
	if path == "" {
		t.Fatalf("take_screenshot named no file: %s", shot)
	}
	// The agent's directory and the one above it are private to the user.
	for d := filepath.Dir(path); d != tmp; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
			t.Errorf("workspace directory %s: mode %v, owner %d; want 0700 and %d", d, fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Uid, uid)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
		t.Errorf("the screenshot %s: %v, want it owned by %d", path, err, uid)
	}

	chromes := 0
	for _, p := range proc.Descendants(cmd.Process.Pid) {
		args, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
		if err != nil || !bytes.Contains(args, []byte("--user-data-dir")) {
			continue // not Chrome's browser process, or gone
		}
		chromes++
		if bytes.Contains(args, []byte("--no-sandbox")) {
			t.Errorf("Chrome runs without its sandbox as user %d: %s", uid, bytes.ReplaceAll(args, []byte{0}, []byte{' '}))
		}
		if owner := procUID(t, p.PID); owner != uid {
			t.Errorf("Chrome runs as %d, want %d", owner, uid)
		}
	}
	if chromes == 0 {
		t.Error("found no Chrome under pagemux")
	}
	if strings.Contains(stderr.String(), "running as root") {
		t.Errorf("pagemux as user %d warns of root:\n%s", uid, stderr.String())
	}
}

// procUID is the real user id of a process, from /proc.
func procUID(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^Uid:\s+(\d+)`).FindSubmatch(status)
	if m == nil {
		t.Fatalf("no Uid line in /proc/%d/status", pid)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// copyFile copies an executable.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
