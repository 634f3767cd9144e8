package main

import (
	"flag"

	"github.com/pagemux/pagemux/tools"
)

// snapConfig is what --snapshot-format says.
type snapConfig struct {
	// format is snapshot.FormatDefault or FormatCompact; "" until the
	// flag is given, which tools reads as the default.
	format string
}

// addSnapshotFlags registers --snapshot-format on fs, checked as it is
// parsed.
func addSnapshotFlags(fs *flag.FlagSet, c *snapConfig) {
	fs.Func("snapshot-format", "`FORMAT` of snapshots (take_snapshot, wait_for, includeSnapshot, a snapshot's filePath): default (chrome-devtools-mcp's text) or compact (the same nodes and uids in fewer tokens: uids spelled e<N>, which every tool takes as it takes the default spelling; one space of indent a level; sibling text lines joined under the first one's uid; repeated attributes left out; URLs relative to the page); take_snapshot's and wait_for's format override it per call (default default)", func(s string) (err error) {
		c.format, err = tools.ParseSnapshotFormat(s)
		return err
	})
}
