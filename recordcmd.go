package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/pagemux/pagemux/internal/cli"
	"github.com/pagemux/pagemux/record"
)

// The exit codes of `pagemux record`.
const (
	recordOK      = subOK    // listed, or exported
	recordNoSteps = 1        // export: the record has no action a steps file can hold
	recordUsage   = subUsage // bad usage, or a record that does not read
)

// recordUsageText is `pagemux record --help`.
const recordUsageText = `pagemux record: read the session records of pagemux --record DIR.

Usage: pagemux record list DIR
       pagemux record export RECORD --steps [-o FILE]

list      prints the records in DIR, newest first: each record's directory, its agent and when it began.
export    turns the navigations, clicks, fills and key presses of RECORD (a directory DIR/<record>) that
          succeeded into a pagemux smoke --steps file (JSON), on stdout or into FILE: clicks and fills by
          the CSS selectors found for their elements as they ran; a click that led to another URL is
          followed by a waitForURL. A secret's ${NAME} stays as it is, for smoke to take from the
          environment. The actions it cannot turn into steps are named on stderr.

Exit 0: done. 1: export: no step to write. 2: bad usage, or a record that does not read.

Example:
  pagemux record export records/20261206T061500Z-alice-1 --steps -o checkout.json
  pagemux smoke --steps checkout.json https://shop.example/
`

// runRecord is `pagemux record`: list or export. It returns the exit code.
func runRecord(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("record", recordUsageText, []subcommand{{"list", recordList}, {"export", recordExport}}, args, stdout, stderr)
}

// recordList is `pagemux record list DIR`.
func recordList(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || isHelp(args[0]) {
		fmt.Fprint(stderr, "pagemux record list: name the --record directory: pagemux record list DIR\n")
		return recordUsage
	}
	all, err := record.List(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "pagemux record list: %v\n", err)
		return recordUsage
	}
	for _, m := range all {
		who := m.Agent
		if who == "" {
			who = "stdio"
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\n", filepath.Join(args[0], m.ID), who, m.Started.Local().Format(time.DateTime))
	}
	return recordOK
}

// recordExport is `pagemux record export RECORD --steps [-o FILE]`.
func recordExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pagemux record export", flag.ContinueOnError)
	steps := fs.Bool("steps", false, "write a pagemux smoke --steps file (the one format there is; say it)")
	out := fs.String("o", "", "write to `FILE` instead of stdout")
	records, err := cli.ParseInterspersed(fs, args, stderr) // flags before and after the record
	if errors.Is(err, flag.ErrHelp) {
		return recordOK
	} else if err != nil {
		fmt.Fprintf(stderr, "pagemux record export: %v\n", err)
		return recordUsage
	}
	if len(records) != 1 || !*steps {
		fmt.Fprint(stderr, "pagemux record export: name one record and the format: pagemux record export RECORD --steps [-o FILE]\n")
		return recordUsage
	}
	rec, err := record.Read(records[0])
	if err != nil {
		fmt.Fprintf(stderr, "pagemux record export: %v\n", err)
		return recordUsage
	}
	list, skipped := record.Export(rec)
	for _, s := range skipped {
		fmt.Fprintf(stderr, "pagemux record export: left out %s\n", s)
	}
	if len(list) == 0 {
		fmt.Fprintf(stderr, "pagemux record export: %s has no navigation, click, fill or key press to write as a step\n", records[0])
		return recordNoSteps
	}
	b, _ := json.MarshalIndent(list, "", "  ")
	b = append(b, '\n')
	if *out == "" {
		_, _ = stdout.Write(b)
		return recordOK
	}
	if err := os.WriteFile(*out, b, 0o600); err != nil {
		fmt.Fprintf(stderr, "pagemux record export: %v\n", err)
		return recordUsage
	}
	return recordOK
}
