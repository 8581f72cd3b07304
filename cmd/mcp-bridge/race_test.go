//go:build race

package main

// raceFlags build the bridge under test with the race detector when the
// tests run with it, so races in the bridge process are caught too.
var raceFlags = []string{"-race"}
