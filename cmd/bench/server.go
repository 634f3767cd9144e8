package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/internal/proc"

	"github.com/pagemux/pagemux/internal/tail"
)

// server is one pagemux process, started from its binary, and the MCP
// client that talks to it over its stdin and stdout.
type server struct {
	c      *client.Client
	cmd    *exec.Cmd
	stderr *tail.Buffer
	log    *slog.Logger
}

// startServer starts bin with args and initialises MCP. It does not open a
// page; pagemux starts Chrome when a tool first needs it.
func startServer(ctx context.Context, bin string, args []string, timeout time.Duration, log *slog.Logger) (*server, error) {
	s := &server{stderr: &tail.Buffer{Size: 256 << 10}, log: log}
	// The same command the plain NewStdioMCPClient builds, kept so that the
	// benchmark knows the server's pid (for its RSS) and can kill it.
	// Chrome's processes are its children and are not measured.
	newCmd := transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
		cmd := exec.Command(command, args...)
		cmd.Env = append(os.Environ(), env...)
		s.cmd = cmd
		return cmd, nil
	})
	c, err := client.NewStdioMCPClientWithOptions(bin, nil, args, newCmd, transport.WithCommandStderrWriter(s.stderr))
	if err != nil {
		return nil, err
	}
	s.c = c
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = c.Initialize(ictx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "pagemux-bench", Version: "1"},
	}})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return s, nil
}

// close ends the server the way an MCP client does (stdin closes; SIGTERM,
// then SIGKILL if it lingers) and says how long it took.
func (s *server) close() (time.Duration, error) {
	start := time.Now()
	err := s.c.Close()
	if s.cmd != nil && s.cmd.Process != nil {
		// Close gives up after about 8 s; never leave the child behind.
		if kerr := s.cmd.Process.Kill(); kerr == nil {
			err = errors.Join(err, errors.New("the server was still running after Close and was killed"))
		}
	}
	return time.Since(start), err
}

// reply is one tool call's result as the benchmark reads it.
type reply struct {
	text    string
	isError bool
	err     error // transport or timeout: the call got no result
	took    time.Duration
}

// failure is the exact text to report for a call that did not succeed.
func (r reply) failure() string {
	if r.err != nil {
		return "call failed: " + r.err.Error()
	}
	return "isError result: " + r.text
}

// call calls a tool with a timeout and measures the wall-clock time of the
// round trip.
func (s *server) call(ctx context.Context, timeout time.Duration, name string, args map[string]any) reply {
	return callTool(ctx, s.c, timeout, name, args)
}

// caller is what makes tool calls: a server over stdio, or an agent over
// HTTP (agents.go).
type caller interface {
	call(ctx context.Context, timeout time.Duration, name string, args map[string]any) reply
}

// callTool is one timed tool call of any MCP client.
func callTool(ctx context.Context, c *client.Client, timeout time.Duration, name string, args map[string]any) reply {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := c.CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	r := reply{took: time.Since(start), err: err}
	if err != nil {
		return r
	}
	r.isError = res.IsError
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			r.text += t.Text
		}
	}
	return r
}

// pid returns the server's process id, checked against /proc: its exe must
// be the binary. If the transport's command is somehow not it, the child of
// this process that runs the binary is the server.
func (s *server) pid(bin string) (int, error) {
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return 0, err
	}
	if s.cmd != nil && s.cmd.Process != nil {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", s.cmd.Process.Pid)); exe == want {
			return s.cmd.Process.Pid, nil
		}
	}
	for _, p := range proc.All() {
		if p.PPID == os.Getpid() {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID)); exe == want {
				return p.PID, nil
			}
		}
	}
	return 0, fmt.Errorf("no child process runs %s", want)
}

// memory reads VmHWM (peak resident set) and VmRSS of a process, in MB.
func memory(pid int) (peak, now float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	kb := func(key string) float64 {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, key+":"); ok {
				f := strings.Fields(rest)
				if len(f) > 0 {
					n, _ := strconv.ParseFloat(f[0], 64)
					return n
				}
			}
		}
		return 0
	}
	return kb("VmHWM") / 1024, kb("VmRSS") / 1024, nil
}

// survivors waits up to wait for the processes to end and returns those
// that did not (same pid and start time, not a zombie).
func survivors(ps []proc.Proc, wait time.Duration) []proc.Proc {
	deadline := time.Now().Add(wait)
	for {
		left := proc.Running(ps)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond) // bounded by deadline
	}
}

// profileDirs returns the --user-data-dir of the processes: the Chrome
// profiles the server uses. Only these are checked after it exits, since
// other pagemux processes on the machine (tests) make their own.
func profileDirs(ps []proc.Proc) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
		for _, arg := range strings.Split(string(b), "\x00") {
			if dir, ok := strings.CutPrefix(arg, "--user-data-dir="); ok && !seen[dir] {
				seen[dir] = true
				out = append(out, dir)
			}
		}
	}
	return out
}

// matchingLines returns the lines t kept that contain any of the needles
// ("" matches every line).
func matchingLines(t *tail.Buffer, needles ...string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(t.String()))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		for _, n := range needles {
			if strings.Contains(sc.Text(), n) {
				out = append(out, sc.Text())
				break
			}
		}
	}
	return out
}
