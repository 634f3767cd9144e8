package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"time"
)

// burstResult is the pipelined-burst check: bursts of burstSize
// evaluate_script calls on one page, each burst written to pagemux's stdin in
// one write, as a client writes an agent's parallel tool calls. The page
// records the order it ran them in; every burst must run in the order written.
type burstResult struct {
	Bursts     int     `json:"bursts"`
	Size       int     `json:"calls_per_burst"`
	OutOfOrder int     `json:"bursts_out_of_order"`
	FirstBad   string  `json:"first_bad_order,omitempty"`
	Burst      *series `json:"burst_wall_time"` // from the write to the last answer
}

const burstSize = 10

// rawServer is pagemux over stdio with raw JSON-RPC lines, for what the SDK
// client cannot do: write many requests at once.
type rawServer struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	nextID int
}

// burstOrder starts its own server in mode and runs n bursts.
func burstOrder(ctx context.Context, bin, siteURL, mode string, n int, log *slog.Logger) (*burstResult, error) {
	res := &burstResult{Bursts: n, Size: burstSize, Burst: &series{Name: fmt.Sprintf("burst of %d pipelined evaluate_script", burstSize)}}
	defer res.Burst.finish()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	s, err := startRaw(ctx, bin, mode)
	if err != nil {
		return res, err
	}
	defer s.close()
	log.Info("pipelined bursts", "mode", mode, "bursts", n)
	if _, err := s.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench-burst", "version": "1"}}); err != nil {
		return res, err
	}
	if _, err := io.WriteString(s.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return res, err
	}
	text, err := s.tool("new_page", map[string]any{"url": siteURL + "/"})
	if err != nil {
		return res, err
	}
	page := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasSuffix(line, "[selected]") {
			fmt.Sscanf(line, "%d:", &page)
		}
	}
	if page == 0 {
		return res, fmt.Errorf("new_page: no selected page in %q", text)
	}
	for b := range n {
		if _, err := s.tool("evaluate_script", map[string]any{"pageId": page, "function": "() => { window.__order = []; return 0 }"}); err != nil {
			return res, err
		}
		var lines []string
		for i := range burstSize {
			s.nextID++
			lines = append(lines, request(s.nextID, "tools/call", map[string]any{"name": "evaluate_script",
				"arguments": map[string]any{"pageId": page, "function": fmt.Sprintf("() => { window.__order.push(%d); return %d }", i, i)}}))
		}
		start := time.Now()
		if _, err := io.WriteString(s.in, strings.Join(lines, "\n")+"\n"); err != nil {
			return res, err
		}
		for range burstSize {
			if _, err := s.read(); err != nil {
				return res, err
			}
		}
		res.Burst.add(time.Since(start))
		order, err := s.tool("evaluate_script", map[string]any{"pageId": page, "function": "() => window.__order.join(',')"})
		if err != nil {
			return res, err
		}
		if got := jsonBlock(order); got != `"0,1,2,3,4,5,6,7,8,9"` {
			res.OutOfOrder++
			if res.FirstBad == "" {
				res.FirstBad = fmt.Sprintf("burst %d ran as %s", b, got)
			}
		}
	}
	return res, nil
}

func startRaw(ctx context.Context, bin, mode string) (*rawServer, error) {
	cmd := exec.CommandContext(ctx, bin, "--lock-mode="+mode, "--log-level=error")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &rawServer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// close ends the server by closing its stdin, as a client does.
func (s *rawServer) close() {
	s.in.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

func request(id int, method string, params any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return string(b)
}

// rawReply is a response as read.
type rawReply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// read returns the next response, skipping notifications.
func (s *rawServer) read() (*rawReply, error) {
	for {
		line, err := s.out.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading pagemux's stdout: %w", err)
		}
		var r rawReply
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("bad line %.200q: %w", line, err)
		}
		if len(r.ID) == 0 {
			continue
		}
		if r.Error != nil {
			return nil, fmt.Errorf("protocol error: %s", r.Error.Message)
		}
		if r.Result != nil && r.Result.IsError {
			return nil, fmt.Errorf("tool error: %s", r.text())
		}
		return &r, nil
	}
}

func (r *rawReply) text() string {
	var b strings.Builder
	if r.Result != nil {
		for _, c := range r.Result.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// call sends one request and reads its answer.
func (s *rawServer) call(method string, params any) (*rawReply, error) {
	s.nextID++
	if _, err := io.WriteString(s.in, request(s.nextID, method, params)+"\n"); err != nil {
		return nil, err
	}
	return s.read()
}

// tool calls one tool and returns its text.
func (s *rawServer) tool(name string, args map[string]any) (string, error) {
	r, err := s.call("tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return r.text(), nil
}
