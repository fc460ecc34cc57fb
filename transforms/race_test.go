//go:build race

package transforms_test

// With the race detector on, TestMemoryStable and
// TestScanCompiledAccumulatesInPlace skip themselves.
func init() { raceEnabled = true }
