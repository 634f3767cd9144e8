//go:build !race

package main

// raceBuild: these tests run without -race (see race_test.go).
const raceBuild = false
