package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pagemux/pagemux/internal/tail"
)

// fleet is what the many-agents benchmark's agents talk to: one pagemux
// --http that launches its own Chrome, or, with -agent-replicas above 1
// (issue 17), that many replicas sharing their locks through an etcd of
// their own, attached to -agent-chromes Chromes with DevTools ports on
// loopback (replicas 1 and 2 on Chrome A, replica 3 on Chrome B for 3 and
// 2). Agent i talks to replica i mod the replicas.
type fleet struct {
	servers []*httpServer
	chromes []*devChrome
	etcd    *exec.Cmd
	etcdEnd chan error
	dir     string // Chromes' profiles and etcd's data
	// warm are the warm-up agents, one per replica; in a cluster they stay
	// until the end, and chromePages are their Chromes' page targets then.
	warm        []*agent
	chromePages []int
	// single-server: pages open with no agent there (Chrome's first tab).
	basePages float64
}

// devChrome is a headless Chrome with a DevTools port on loopback.
type devChrome struct {
	cmd   *exec.Cmd
	url   string
	ended chan error
}

// startFleet starts the servers of one lock mode.
func startFleet(ctx context.Context, cfg *config, bin, mode string, log *slog.Logger) (*fleet, error) {
	args := append([]string{"--lock-mode=" + mode}, cfg.agentArgs...)
	f := &fleet{}
	if cfg.replicas <= 1 {
		h, err := startHTTP(ctx, bin, args, cfg.callTimeout)
		if err != nil {
			return nil, err
		}
		f.servers = []*httpServer{h}
		return f, nil
	}
	var err error
	// Short: Chrome's singleton socket must fit in a profile's path.
	if f.dir, err = os.MkdirTemp("/tmp", "pmbench"); err != nil {
		return nil, err
	}
	etcdURL, err := f.startEtcd(ctx, cfg, log)
	if err != nil {
		f.close()
		return nil, err
	}
	for i := range cfg.chromes {
		c, err := startDevChrome(ctx, filepath.Join(f.dir, fmt.Sprintf("chrome%d", i)))
		if err != nil {
			f.close()
			return nil, err
		}
		f.chromes = append(f.chromes, c)
	}
	for i := range cfg.replicas {
		c := f.chromes[i*len(f.chromes)/cfg.replicas]
		h, err := startHTTP(ctx, bin, append(args, "--etcd="+etcdURL, "--browser-url="+c.url), cfg.callTimeout)
		if err != nil {
			f.close()
			return nil, fmt.Errorf("replica %d: %w", i+1, err)
		}
		f.servers = append(f.servers, h)
	}
	log.Info("cluster", "replicas", cfg.replicas, "chromes", cfg.chromes, "etcd", etcdURL)
	return f, nil
}

// startEtcd starts a 1-member etcd on free loopback ports (fsync on, as in
// production, unless -etcd-fsync=false) and waits for its /health.
func (f *fleet) startEtcd(ctx context.Context, cfg *config, log *slog.Logger) (string, error) {
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close() // free again just before etcd binds it
	}
	client, peer := "http://"+addrs[0], "http://"+addrs[1]
	f.etcd = exec.Command(cfg.etcdBin, "--name", "bench", "--data-dir", filepath.Join(f.dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "bench="+peer, "--log-level", "warn")
	if !cfg.etcdFsync {
		f.etcd.Args = append(f.etcd.Args, "--unsafe-no-fsync")
	}
	etcdLog := &tail.Buffer{Size: 64 << 10}
	f.etcd.Stderr = etcdLog
	if err := f.etcd.Start(); err != nil {
		return "", fmt.Errorf("etcd %s: %w", cfg.etcdBin, err)
	}
	f.etcdEnd = make(chan error, 1)
	go func() { f.etcdEnd <- f.etcd.Wait() }()
	// etcd says it is ready on /health; poll it, bounded.
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(client + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				log.Info("etcd", "url", client, "bin", cfg.etcdBin)
				return client, nil
			}
		}
		select {
		case err := <-f.etcdEnd:
			f.etcdEnd <- err
			return "", fmt.Errorf("etcd exited while starting: %v\n%s", err, strings.Join(matchingLines(etcdLog, ""), "\n"))
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", errors.New("etcd not healthy within 30 s")
		}
	}
}

// chromeDisabledFeatures are the features a Chrome pagemux launches has
// off in headless (browser/config.go): without them each window's address
// bar popup keeps Chrome's WebUI renderer busy, about 1.8 cores of this
// 2-CPU machine with the pages of 32 agents open and idle.
const chromeDisabledFeatures = "Translate,WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup"

// startDevChrome starts a headless Chrome with its profile in dir and a
// DevTools port of its choosing, and returns once it listens.
func startDevChrome(ctx context.Context, dir string) (*devChrome, error) {
	path := os.Getenv("CHROME_PATH")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			return nil, fmt.Errorf("no Chrome for the cluster (CHROME_PATH, chromium): %w", err)
		}
	}
	args := []string{"--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--user-data-dir=" + dir, "--disable-features=" + chromeDisabledFeatures, "about:blank"}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	c := &devChrome{cmd: exec.Command(path, args...), ended: make(chan error, 1)}
	// A process group of its own, so that close stops its helpers too.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.ended <- c.cmd.Wait() }()
	// Chrome writes its port into the profile once it listens, and tells
	// nothing else: poll for the file, bounded.
	for deadline := time.Now().Add(30 * time.Second); ; {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if port, _, ok := strings.Cut(string(b), "\n"); err == nil && ok && port != "" {
			c.url = "http://127.0.0.1:" + port
			return c, nil
		}
		select {
		case err := <-c.ended:
			return nil, fmt.Errorf("chrome exited before it opened its DevTools port: %v", err)
		case <-ctx.Done():
			c.close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.close()
			return nil, errors.New("chrome wrote no DevToolsActivePort in 30 s")
		}
	}
}

// pageTargets counts the page targets Chrome has, from its /json/list.
func (c *devChrome) pageTargets() (int, error) {
	resp, err := http.Get(c.url + "/json/list")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var ts []struct{ Type string }
	if err := json.NewDecoder(resp.Body).Decode(&ts); err != nil {
		return 0, err
	}
	n := 0
	for _, t := range ts {
		if t.Type == "page" {
			n++
		}
	}
	return n, nil
}

func (c *devChrome) close() {
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.ended:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.ended
	}
}

// url is the MCP endpoint agent i talks to.
func (f *fleet) url(i int) string {
	return f.servers[i%len(f.servers)].base + "/mcp"
}

// warmUp has each server attach or start its Chrome and open a page, so
// that N=1 measures a warm browser like the others, and notes the pages
// open without the runs' agents.
func (f *fleet) warmUp(ctx context.Context, cfg *config, siteURL string) error {
	for i := range f.servers {
		warm, err := connectAgent(ctx, f.url(i), cfg.callTimeout)
		if err != nil {
			return err
		}
		f.warm = append(f.warm, warm)
		if _, _, err := openPage(ctx, warm, cfg, fmt.Sprintf("%s/form.html?agent=warm-%d", siteURL, i)); err != nil {
			return err
		}
	}
	if len(f.chromes) > 0 {
		for _, c := range f.chromes {
			n, err := c.pageTargets()
			if err != nil {
				return err
			}
			f.chromePages = append(f.chromePages, n)
		}
		return nil
	}
	open, err := f.servers[0].pagesOpen()
	if err != nil {
		return err
	}
	f.closeWarm()
	// Chrome's first tab, owned by no one, stays: the pages the runs leave
	// behind are counted from here.
	f.basePages = open - 1
	return f.waitPages(10 * time.Second)
}

func (f *fleet) closeWarm() {
	closeAgents(f.warm)
	f.warm = nil
}

// waitPages waits until no more pages are open than after the warm-up: the
// agents that left took theirs, and closing them must not load the next run.
func (f *fleet) waitPages(wait time.Duration) error {
	if len(f.chromes) == 0 {
		return f.servers[0].waitPages(f.basePages, wait)
	}
	deadline := time.Now().Add(wait)
	for i, c := range f.chromes {
		for {
			n, err := c.pageTargets()
			if err != nil {
				return err
			}
			if n <= f.chromePages[i] {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("chrome %d has %d pages %v after their agents left, want %d", i, n, wait, f.chromePages[i])
			}
			time.Sleep(100 * time.Millisecond) // polling, bounded by deadline
		}
	}
	return nil
}

// close stops the servers (at once), then the Chromes and etcd, and
// removes their directory. It returns the longest a server took to stop.
func (f *fleet) close() (time.Duration, error) {
	f.closeWarm()
	var (
		mu   sync.Mutex
		took time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	for _, h := range f.servers {
		wg.Go(func() {
			d, err := h.close()
			mu.Lock()
			defer mu.Unlock()
			took = max(took, d)
			errs = append(errs, err)
		})
	}
	wg.Wait()
	for _, c := range f.chromes {
		c.close()
	}
	if f.etcd != nil && f.etcd.Process != nil {
		_ = f.etcd.Process.Signal(syscall.SIGTERM)
		select {
		case <-f.etcdEnd:
		case <-time.After(10 * time.Second):
			_ = f.etcd.Process.Kill()
			<-f.etcdEnd
		}
	}
	if f.dir != "" {
		os.RemoveAll(f.dir)
	}
	return took, errors.Join(errs...)
}
