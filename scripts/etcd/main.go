// Command etcd is etcd 3.7.3's server, built from the Go module proxy for
// pagemux's tests (scripts/setup builds it into bin/etcd). It is a module of
// its own so that pagemux's module never depends on etcd's server, and because
// `go install` refuses the server module for its replace directives.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
