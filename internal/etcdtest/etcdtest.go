// Package etcdtest starts real etcd servers for tests: 1- or 3-member
// clusters of bin/etcd (etcd 3.7.3, which scripts/setup builds) on loopback,
// each member on free ports with its data in t.TempDir(), stopped when the
// test ends. Members can be stopped, killed and started again one by one, for
// quorum tests.
//
// It starts no etcd of its own making and mocks nothing: a missing bin/etcd
// fails the test, telling to run ./scripts/setup; it never skips.
package etcdtest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/pagemux/pagemux/internal/tail"
)

// StartTimeout bounds how long a member may take to say it is ready to serve
// clients. It is generous: a loaded 2-CPU machine running the -race suite
// can take seconds where an idle one takes a few hundred milliseconds.
const StartTimeout = 60 * time.Second

// readyLine is what etcd logs once it has joined its cluster (its member
// attributes published through raft, so a quorum answered) and serves
// clients. Waiting for it is waiting for an event, not for a guessed delay.
const readyLine = `"ready to serve client requests"`

// Binary returns the absolute path of the etcd the tests run: $PAGEMUX_ETCD,
// else bin/etcd at the repository's root. It fails the test when there is
// none, saying how to build it.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("PAGEMUX_ETCD"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("etcdtest: PAGEMUX_ETCD=%s: %v", p, err)
		}
		return p
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	p := filepath.Join(root, "bin", "etcd")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("etcdtest: no etcd at %s (%v): run ./scripts/setup, which builds etcd 3.7.3 there", p, err)
	}
	return p
}

// repoRoot finds the directory of pagemux's go.mod above the working
// directory (go test runs a test in its package's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/pagemux/pagemux\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no pagemux go.mod above the working directory")
		}
		dir = parent
	}
}

// Cluster is a running etcd cluster of one or more members.
type Cluster struct {
	// Members are the cluster's members, in the order of their names m0, m1 …
	Members []*Member
}

// Start starts a cluster of n members (1 or 3, usually) and returns once
// every member serves clients. It stops them all when the test ends. Ports
// are picked free just before the start; should one be taken in between,
// the whole cluster is started again on new ports (up to three tries).
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := Binary(t)
	var lastErr error
	for range 3 {
		c, err := start(t, bin, n)
		if err == nil {
			return c
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	t.Fatalf("etcdtest: %v", lastErr)
	return nil
}

var errPortTaken = errors.New("a port was taken before etcd bound it")

func start(t testing.TB, bin string, n int) (*Cluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	token := make([]byte, 6)
	_, _ = rand.Read(token)
	c := &Cluster{}
	var initial []string
	for i := range n {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			bin:       bin,
			dir:       t.TempDir(),
		}
		initial = append(initial, m.Name+"="+m.PeerURL)
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.args = []string{
			"--name", m.Name,
			"--data-dir", m.dir,
			"--listen-client-urls", m.ClientURL,
			"--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL,
			"--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "etcdtest-" + hex.EncodeToString(token),
			// Quicker elections than the defaults (100 ms, 1 s): a lone member
			// leads sooner and a 3-member cluster recovers sooner; loopback
			// answers well within 50 ms even on a loaded machine.
			"--heartbeat-interval", "50",
			"--election-timeout", "500",
			"--log-level", "info",
		}
		if os.Getenv("PAGEMUX_ETCD_FSYNC") == "" {
			// Tests keep nothing worth an fsync; without it a member writes
			// several times faster on a slow disk. PAGEMUX_ETCD_FSYNC=1
			// keeps it, for benchmarks that should pay what production does.
			m.args = append(m.args, "--unsafe-no-fsync")
		}
	}
	t.Cleanup(c.stopAll)
	for _, m := range c.Members {
		if err := m.launch(); err != nil {
			return nil, err
		}
	}
	for _, m := range c.Members {
		if err := m.waitReady(); err != nil {
			c.stopAll()
			return nil, err
		}
	}
	return c, nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Endpoints returns every member's client URL, stopped members included.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Client returns a client of the cluster, on every member's endpoint unless
// endpoints are given, closed when the test ends. Its logger is silent:
// errors reach the test through the calls' results.
func (c *Cluster) Client(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	if len(endpoints) == 0 {
		endpoints = c.Endpoints()
	}
	return NewClient(t, endpoints...)
}

// NewClient returns a client of etcd at endpoints, closed when the test
// ends; it may be closed sooner, as a test does to play a process that died.
func NewClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcdtest: client of %v: %v", endpoints, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func (c *Cluster) stopAll() {
	for _, m := range c.Members {
		m.signal(syscall.SIGKILL)
	}
}

// Member is one etcd process of a Cluster.
type Member struct {
	// Name is the member's name in the cluster: m0, m1 …
	Name string
	// ClientURL is where it serves clients, such as http://127.0.0.1:41234.
	ClientURL string
	// PeerURL is where it talks to the other members.
	PeerURL string

	bin, dir string
	args     []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	ready   chan struct{} // closed when the running process logged readyLine
	exited  chan struct{} // closed when it has exited
	log     *tail.Buffer
	waitErr error
}

// Running reports whether the member's process is running.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Start starts a stopped member again, on its ports and data, and waits
// until it serves clients. A member of a 3-member cluster serves only once a
// quorum of members is up: to bring two back, call StartNoWait on the first
// and Start on the second, or WaitReady after both.
func (m *Member) Start(t testing.TB) {
	t.Helper()
	m.StartNoWait(t)
	m.WaitReady(t)
}

// StartNoWait starts a stopped member again without waiting for it to serve.
func (m *Member) StartNoWait(t testing.TB) {
	t.Helper()
	if m.Running() {
		t.Fatalf("etcdtest: member %s is already running", m.Name)
	}
	if err := m.launch(); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
}

// WaitReady waits until the member serves clients, failing the test with
// its last log lines if it exits or takes longer than StartTimeout.
func (m *Member) WaitReady(t testing.TB) {
	t.Helper()
	if err := m.waitReady(); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
}

// Stop ends the member with SIGTERM, as an operator stops it, and waits for
// its process to exit (killing it after 10 s).
func (m *Member) Stop(t testing.TB) {
	t.Helper()
	if !m.signal(syscall.SIGTERM) {
		t.Fatalf("etcdtest: member %s is not running", m.Name)
	}
}

// Kill ends the member with SIGKILL, as a crash does, and waits for its
// process to exit.
func (m *Member) Kill(t testing.TB) {
	t.Helper()
	if !m.signal(syscall.SIGKILL) {
		t.Fatalf("etcdtest: member %s is not running", m.Name)
	}
}

// signal sends sig and waits for the exit; it reports false when no process
// was running.
func (m *Member) signal(sig syscall.Signal) bool {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return true
}

func (m *Member) launch() error {
	cmd := exec.Command(m.bin, m.args...)
	dieWithParent(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.bin, err)
	}
	ready, exited := make(chan struct{}), make(chan struct{})
	log := &tail.Buffer{Size: 8 << 10}
	m.mu.Lock()
	m.cmd, m.ready, m.exited, m.log, m.waitErr = cmd, ready, exited, log, nil
	m.mu.Unlock()
	verbose := os.Getenv("PAGEMUX_TEST_LOG") != ""
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = log.Write([]byte(line + "\n"))
			if verbose {
				fmt.Fprintf(os.Stderr, "etcd %s: %s\n", m.Name, line)
			}
			if !once && strings.Contains(line, readyLine) {
				once = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		err := cmd.Wait()
		m.mu.Lock()
		m.waitErr = err
		m.mu.Unlock()
		close(exited)
	}()
	return nil
}

func (m *Member) waitReady() error {
	m.mu.Lock()
	ready, exited, log := m.ready, m.exited, m.log
	m.mu.Unlock()
	if ready == nil {
		return fmt.Errorf("member %s was never started", m.Name)
	}
	select {
	case <-ready:
		return nil
	case <-exited:
		m.mu.Lock()
		err := m.waitErr
		m.mu.Unlock()
		out := log.String()
		if strings.Contains(out, "address already in use") {
			return fmt.Errorf("member %s: %w: %s", m.Name, errPortTaken, lastLines(out, 3))
		}
		return fmt.Errorf("member %s (%s) exited before serving (%v); its last log lines:\n%s", m.Name, m.ClientURL, err, lastLines(out, 15))
	case <-time.After(StartTimeout):
		return fmt.Errorf("member %s (%s) did not serve clients within %s; its last log lines:\n%s", m.Name, m.ClientURL, StartTimeout, lastLines(log.String(), 15))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
