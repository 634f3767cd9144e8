package etcdtest

import (
	"context"
	"testing"
	"time"
)

// TestMemberRestartKeepsData proves a member serves once started, stops and
// comes back on its ports and data, and that the cluster's endpoints are
// its client URLs.
func TestMemberRestartKeepsData(t *testing.T) {
	t.Parallel()
	c := Start(t, 1)
	m := c.Members[0]
	if got := c.Endpoints(); len(got) != 1 || got[0] != m.ClientURL {
		t.Fatalf("Endpoints() = %v, want [%s]", got, m.ClientURL)
	}
	cli := c.Client(t)
	ctx := t.Context()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	m.Kill(t)
	if m.Running() {
		t.Fatal("killed member still running")
	}
	m.Start(t)
	// The client reconnects by itself; bound the first request generously.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart: %v, want k=v", resp.Kvs)
	}
	m.Stop(t)
	if m.Running() {
		t.Fatal("stopped member still running")
	}
}

// TestThreeMembers proves a 3-member cluster starts and serves on every
// member.
func TestThreeMembers(t *testing.T) {
	t.Parallel()
	c := Start(t, 3)
	for _, m := range c.Members {
		cli := c.Client(t, m.ClientURL)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		if _, err := cli.Put(ctx, "from-"+m.Name, "x"); err != nil {
			t.Fatalf("put through %s: %v", m.Name, err)
		}
		cancel()
	}
}
