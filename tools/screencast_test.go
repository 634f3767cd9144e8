package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/pagelock"
)

// probeVideo checks with ffprobe that path is a playable video and returns
// its codec, the number of frames it decodes and their size ("320x240").
func probeVideo(t *testing.T, path string) (codec string, frames int, size string) {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=codec_type,codec_name,nb_read_frames,width,height", "-of", "default=noprint_wrappers=1", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ffprobe %s: %v\n%s", path, err, out)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		fields[k] = v
	}
	if fields["codec_type"] != "video" {
		t.Fatalf("%s has no video stream: %s", path, out)
	}
	frames, _ = strconv.Atoi(fields["nb_read_frames"])
	return fields["codec_name"], frames, fields["width"] + "x" + fields["height"]
}

// openSmallPage opens path in a 320x240 window: a screencast records at the
// page's size, and the default window's 1905x2053 frames cost ffmpeg ~50
// times as much to decode and encode, for as long as the recording runs
// (on a loaded machine, minutes of CPU for the tests below).
func (e *testEnv) openSmallPage(t *testing.T, path string) int {
	t.Helper()
	id := e.openPage(t, path)
	e.ok(t, "resize_page", map[string]any{"pageId": id, "width": 320, "height": 240})
	return id
}

func TestScreencastRecordsAVideo(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openSmallPage(t, "/css.html")
	want := filepath.Join(t.TempDir(), "cast.mp4")
	// chrome-devtools-mcp writes MP4 whatever the extension asked for.
	asked := strings.TrimSuffix(want, ".mp4") + ".webm"
	got := e.ok(t, "screencast_start", map[string]any{"pageId": id, "filePath": asked})
	mustContain(t, got, "Screencast recording started. The recording will be saved to "+want+". Use screencast_stop to stop recording.")
	mustContain(t, e.fails(t, "screencast_start", map[string]any{"pageId": id}),
		"Error: a screencast recording is already in progress. Use screencast_stop to stop it before starting a new one.")
	// Other tools go on working on the page while it records.
	for _, color := range []string{"red", "green", "blue"} {
		e.eval(t, id, "() => { document.body.style.background = '"+color+"'; return 1 }")
		time.Sleep(200 * time.Millisecond)
	}
	e.ok(t, "click", map[string]any{"pageId": id, "uid": e.uid(t, id, "Card button")})
	got = e.ok(t, "screencast_stop", map[string]any{"pageId": id})
	if got != "The screencast recording has been stopped and saved to "+want+"." {
		t.Fatalf("screencast_stop answered:\n%s", got)
	}
	codec, frames, size := probeVideo(t, want)
	if codec != "h264" || frames <= 1 || size != "320x240" {
		t.Fatalf("video %s: codec %s, %d frames of %s; want h264, more than one frame, at the page's 320x240", want, codec, frames, size)
	}
	if _, err := os.Stat(asked); err == nil {
		t.Fatalf("a file was written at %s too", asked)
	}
	mustContain(t, e.fails(t, "screencast_stop", map[string]any{"pageId": id}), "Error: no active screencast recording to stop.")
	// A page records again once stopped.
	e.ok(t, "screencast_start", map[string]any{"pageId": id, "filePath": want})
	e.ok(t, "screencast_stop", map[string]any{"pageId": id})
	probeVideo(t, want)
}

func TestScreencastDefaultPath(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.Global)
	id := e.openSmallPage(t, "/form.html")
	got := e.ok(t, "screencast_start", map[string]any{"pageId": id})
	_, rest, ok := strings.Cut(got, "will be saved to ")
	path, _, _ := strings.Cut(rest, ". Use screencast_stop")
	if !ok || filepath.Base(path) != "screencast.mp4" || !strings.HasPrefix(filepath.Base(filepath.Dir(path)), "pagemux-screencast-") {
		t.Fatalf("screencast_start without filePath answered:\n%s", got)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(path)) })
	time.Sleep(300 * time.Millisecond)
	mustContain(t, e.ok(t, "screencast_stop", map[string]any{"pageId": id}), "saved to "+path+".")
	probeVideo(t, path)
}

func TestScreencastErrors(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	mustContain(t, e.fails(t, "screencast_stop", map[string]any{"pageId": id}), "Error: no active screencast recording to stop.")
	outside := filepath.Join(string(filepath.Separator), "pagemux-no-such-root", "cast.mp4")
	mustContain(t, e.fails(t, "screencast_start", map[string]any{"pageId": id, "filePath": outside}), "is outside the allowed roots")
	// A refused start leaves nothing running.
	mustContain(t, e.fails(t, "screencast_stop", map[string]any{"pageId": id}), "no active screencast recording")
}

// Closing the page ends its screencast with a complete video, and ffmpeg
// exits.
func TestScreencastPageClosed(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openSmallPage(t, "/form.html")
	path := filepath.Join(t.TempDir(), "closed.mp4")
	e.ok(t, "screencast_start", map[string]any{"pageId": id, "filePath": path})
	p, err := e.b.Page(id)
	if err != nil {
		t.Fatal(err)
	}
	sc := p.Screencast()
	if sc == nil {
		t.Fatal("page has no screencast after screencast_start")
	}
	e.eval(t, id, "() => { document.body.style.background = 'red'; return 1 }")
	time.Sleep(300 * time.Millisecond)
	e.ok(t, "close_page", map[string]any{"pageId": id})
	select {
	case <-sc.Done():
	case <-time.After(time.Minute):
		t.Fatal("the screencast did not end within a minute of its page closing")
	}
	frames, reason, err := sc.Result()
	if err != nil || !strings.Contains(reason, "closed") || frames < 1 {
		t.Fatalf("screencast of a closed page: %d frames, reason %q, error %v", frames, reason, err)
	}
	probeVideo(t, path)
}

// Without ffmpeg, screencast_start says how to get it. Not parallel: it
// changes PATH for the test binary.
func TestScreencastWithoutFFmpeg(t *testing.T) {
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	t.Setenv("PATH", t.TempDir())
	got := e.fails(t, "screencast_start", map[string]any{"pageId": id, "filePath": filepath.Join(t.TempDir(), "x.mp4")})
	mustContain(t, got, "ffmpeg", "./scripts/setup")
}

// Closing the server, and so its Chrome, ends a screencast with a complete
// video too.
func TestScreencastServerClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Kept: true})
	id := e.openSmallPage(t, "/form.html")
	path := filepath.Join(t.TempDir(), "server.mp4")
	e.ok(t, "screencast_start", map[string]any{"pageId": id, "filePath": path})
	p, err := e.b.Page(id)
	if err != nil {
		t.Fatal(err)
	}
	sc := p.Screencast()
	time.Sleep(300 * time.Millisecond)
	e.close()
	select {
	case <-sc.Done():
	case <-time.After(time.Minute):
		t.Fatal("the screencast did not end within a minute of the server closing")
	}
	if _, reason, err := sc.Result(); err != nil || reason == "" {
		t.Fatalf("screencast of a closed server: reason %q, error %v", reason, err)
	}
	probeVideo(t, path)
}

// A path ffmpeg cannot write is refused at the start, not at the stop.
func TestScreencastUnwritablePath(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	dir := filepath.Join(t.TempDir(), "taken.mp4")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mustContain(t, e.fails(t, "screencast_start", map[string]any{"pageId": id, "filePath": dir}), "cannot write the video")
	mustContain(t, e.fails(t, "screencast_stop", map[string]any{"pageId": id}), "no active screencast recording")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the directory in the way was touched: %v", err)
	}
}

// A dialog blocks screencast_start, as other tools, but not screencast_stop.
func TestScreencastWithDialog(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openSmallPage(t, "/form.html")
	path := filepath.Join(t.TempDir(), "dialog.mp4")
	e.ok(t, "screencast_start", map[string]any{"pageId": id, "filePath": path})
	mustContain(t, e.ok(t, "click", map[string]any{"pageId": id, "uid": e.uid(t, id, `button "Alert"`)}), "# Open dialog")
	mustContain(t, e.fails(t, "screencast_start", map[string]any{"pageId": id}), "# Open dialog")
	mustContain(t, e.ok(t, "screencast_stop", map[string]any{"pageId": id}), "saved to "+path+".")
	probeVideo(t, path)
	e.ok(t, "handle_dialog", map[string]any{"pageId": id, "action": "accept"})
}
