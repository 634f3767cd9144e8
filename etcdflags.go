package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/pagemux/pagemux/cluster"
	"github.com/pagemux/pagemux/tools"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdConfig is how pagemux shares its locks with other pagemux processes
// through etcd (issue 17); the flags are named as etcdctl names its own,
// with etcd- before them.
type etcdConfig struct {
	endpoints           string
	prefix              string
	leaseTTL            time.Duration
	cacert, cert, key   string
	user                string
	fallback            string
	dialTimeout         time.Duration
	insecureSkipVerify  bool
	passwordFromEnviron string // PAGEMUX_ETCD_PASSWORD, read at parse
}

// etcdPasswordEnv holds the password of --etcd-user, kept out of the
// command line (which every user of the machine can read).
const etcdPasswordEnv = "PAGEMUX_ETCD_PASSWORD"

func addEtcdFlags(fs *flag.FlagSet, c *etcdConfig) {
	fs.StringVar(&c.endpoints, "etcd", "", "share locks with the other pagemux processes driving the same Chrome (--browser-url) through etcd at `ENDPOINTS` (comma-separated, such as http://127.0.0.1:2379); without it locks are this process's alone")
	fs.StringVar(&c.prefix, "etcd-prefix", cluster.DefaultPrefix, "with --etcd, the key `PREFIX` every pagemux sharing the browsers must use")
	fs.DurationVar(&c.leaseTTL, "lease-ttl", cluster.DefaultTTL, "with --etcd, the lease of this process's locks: a process that dies or is cut off from etcd frees them within it (whole seconds)")
	fs.StringVar(&c.cacert, "etcd-cacert", "", "with --etcd, verify etcd's TLS certificate with this CA bundle `FILE` (https:// endpoints)")
	fs.StringVar(&c.cert, "etcd-cert", "", "with --etcd, the TLS client certificate `FILE`")
	fs.StringVar(&c.key, "etcd-key", "", "with --etcd, the TLS client key `FILE`")
	fs.BoolVar(&c.insecureSkipVerify, "etcd-insecure-skip-tls-verify", false, "with --etcd, do not verify etcd's TLS certificate (for tests only)")
	fs.StringVar(&c.user, "etcd-user", "", "with --etcd, the etcd `USER` to authenticate as; the password is read from $"+etcdPasswordEnv)
	fs.StringVar(&c.fallback, "etcd-fallback", "", "with --etcd, `local` keeps serving on this process's locks alone while etcd is unavailable, with a warning at each switch (unsafe when other processes drive the same tabs); default: calls fail with an error naming etcd")
	fs.DurationVar(&c.dialTimeout, "etcd-dial-timeout", 5*time.Second, "with --etcd, how long one request to etcd may take")
}

// check validates the flags once parsed.
func (c *etcdConfig) check() error {
	if c.endpoints == "" {
		for _, set := range []bool{c.prefix != cluster.DefaultPrefix, c.leaseTTL != cluster.DefaultTTL, c.cacert != "", c.cert != "", c.key != "", c.user != "", c.fallback != ""} {
			if set {
				return errors.New("the --etcd-* and --lease-ttl flags need --etcd ENDPOINTS")
			}
		}
		return nil
	}
	if c.fallback != "" && c.fallback != "local" {
		return fmt.Errorf("--etcd-fallback %q: the only fallback is \"local\"", c.fallback)
	}
	if c.leaseTTL < time.Second {
		return fmt.Errorf("--lease-ttl %s: etcd counts whole seconds; give 1s or more", c.leaseTTL)
	}
	if (c.cert == "") != (c.key == "") {
		return errors.New("--etcd-cert and --etcd-key go together")
	}
	c.passwordFromEnviron = os.Getenv(etcdPasswordEnv)
	if c.user != "" && c.passwordFromEnviron == "" {
		return fmt.Errorf("--etcd-user %s: set its password in $%s", c.user, etcdPasswordEnv)
	}
	return nil
}

// open connects to etcd, which need not be up yet: the first call that
// takes a lock finds out; pool hands out the page ids of a pool of browsers
// from one counter (cluster.Options.OneCounter). close revokes this
// process's lease, freeing its locks at once.
func (c *etcdConfig) open(log *slog.Logger, pool bool) (*tools.Cluster, func(), error) {
	if c.endpoints == "" {
		return nil, func() {}, nil
	}
	var eps []string
	for _, e := range strings.Split(c.endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	cfg := clientv3.Config{Endpoints: eps, DialTimeout: c.dialTimeout, Logger: zap.NewNop(),
		Username: c.user, Password: c.passwordFromEnviron}
	if c.cacert != "" || c.cert != "" || c.insecureSkipVerify {
		info := transport.TLSInfo{CertFile: c.cert, KeyFile: c.key, TrustedCAFile: c.cacert, InsecureSkipVerify: c.insecureSkipVerify}
		var tc *tls.Config
		var err error
		if c.cert == "" && c.cacert == "" {
			tc = &tls.Config{InsecureSkipVerify: true}
		} else if tc, err = info.ClientConfig(); err != nil {
			return nil, nil, fmt.Errorf("--etcd TLS: %w", err)
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("--etcd %s: %w", c.endpoints, err)
	}
	locks := cluster.New(cli, cluster.Options{Prefix: c.prefix, TTL: c.leaseTTL, RequestTimeout: c.dialTimeout, Logger: log, OneCounter: pool})
	log.Info("sharing locks through etcd", "endpoints", eps, "prefix", c.prefix, "lease_ttl", c.leaseTTL, "fallback", c.fallback)
	closeFn := func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.dialTimeout)
		defer cancel()
		if err := locks.Close(ctx); err != nil {
			log.Warn("revoking this process's etcd lease (its locks go when it expires)", "error", err)
		}
		cli.Close()
	}
	return &tools.Cluster{Locks: locks, FallbackLocal: c.fallback == "local"}, closeFn, nil
}
