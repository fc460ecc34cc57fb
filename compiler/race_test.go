//go:build race

package compiler_test

// raceEnabled: the race detector makes sync.Pool drop items at random,
// so allocation counts are not meaningful.
const raceEnabled = true
