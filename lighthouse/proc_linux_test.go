package lighthouse

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/proc"
)

// TestRunnerDiesWithPagemux: a runner started as lighthouse starts node
// dies when its parent is SIGKILLed, when no cancellation can run. The
// parent is this test binary run again as a child that starts the runner
// (sleep here) and waits to be killed.
func TestRunnerDiesWithPagemux(t *testing.T) {
	if os.Getenv("PAGEMUX_RUNNER_PARENT") == "1" {
		cmd := exec.CommandContext(context.Background(), "sleep", "120")
		inGroup(cmd)
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		select {} // until killed
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestRunnerDiesWithPagemux$")
	parent.Env = append(os.Environ(), "PAGEMUX_RUNNER_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		parent.Process.Kill()
		t.Fatalf("the parent said %q: %v %v", line, err, perr)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	runner, ok := proc.Read(pid)
	if !ok || !proc.Alive(runner) {
		t.Fatalf("runner %d is not running", pid)
	}
	_ = parent.Process.Signal(syscall.SIGKILL)
	_ = parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for proc.Alive(runner) {
		if time.Now().After(deadline) {
			t.Fatalf("runner %d outlived its SIGKILLed parent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
