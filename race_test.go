//go:build race

package main

// raceBuild: these tests run with -race, and so does the pagemux binary
// they build (buildBinary), which then shares their compiled packages.
const raceBuild = true
