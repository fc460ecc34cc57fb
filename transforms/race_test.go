//go:build race

package transforms_test

// With the race detector on, TestMemoryStable skips itself.
func init() { raceEnabled = true }
