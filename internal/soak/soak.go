// Package soak sizes the loops of the tests that prove a behaviour holds
// over many calls, pages or messages: small by default, so that
// ./scripts/test passes in minutes on a 2-CPU machine, and at full size
// with PAGEMUX_SOAK=1, which .ci/run sets for a second run of those tests
// (the Tests list below). It changes no behaviour of pagemux, only how
// often a test repeats what it checks.
package soak

import "os"

// Tests are the tests that call N or Enabled, as -run takes them: .ci/run runs them
// again at full size, and TestListed fails when one is missing here.
const Tests = "^(TestAgentsLoadOwnDocuments|TestBurstOrder|TestClosedPagesFreeTheirRecords|TestEventFlood|TestEventFloodTool|TestGoSDKSessionProgress|TestIncrementalBigRealPage|TestIncrementalSizes|TestJoinBinary|TestTeam|TestTypeScriptSDK)$"

// Enabled reports whether PAGEMUX_SOAK asks for full-size loops.
func Enabled() bool {
	v := os.Getenv("PAGEMUX_SOAK")
	return v != "" && v != "0"
}

// N returns full when soaking, else small.
func N(small, full int) int {
	if Enabled() {
		return full
	}
	return small
}
