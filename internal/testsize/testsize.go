package testsize

import "os"

// Full reports whether the exhaustive sweeps run: PEEL_FULL is set to
// anything but "" or "0". Full never panics.
func Full() bool {
	v := os.Getenv("PEEL_FULL")
	return v != "" && v != "0"
}

// Pick returns full when Full reports true, and quick otherwise: the
// size of a sweep in each run.
func Pick[T any](quick, full T) T {
	if Full() {
		return full
	}
	return quick
}
