package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// The exit codes the subcommands (pagemux rules, pagemux record) share.
const (
	subOK    = 0 // done
	subUsage = 2 // bad usage, or a file that does not read
)

// subcommand is one verb of a command such as `pagemux rules`.
type subcommand struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) int
}

// runSubcommand runs the verb args name of command (its usage text
// usage): no verb prints the usage on stderr, a help flag on stdout, and
// an unknown verb is a usage error naming the ones there are.
func runSubcommand(command, usage string, verbs []subcommand, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return subUsage
	}
	if args[0] == "help" || isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return subOK
	}
	if i := slices.IndexFunc(verbs, func(v subcommand) bool { return v.name == args[0] }); i >= 0 {
		return verbs[i].run(args[1:], stdout, stderr)
	}
	names := make([]string, len(verbs))
	for i, v := range verbs {
		names[i] = v.name
	}
	fmt.Fprintf(stderr, "pagemux %s: unknown command %q: want %s\nSee pagemux %s --help.\n", command, args[0], strings.Join(names, " or "), command)
	return subUsage
}

// isHelp reports whether a is a help flag.
func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }
