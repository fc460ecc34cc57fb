// Package testsize says how big the project's tests make their sweeps.
//
// A plain go test ./... runs every test at a size that keeps the whole
// suite to a few minutes on two cores. The exhaustive sweeps (property
// tests over large shapes, accuracy sweeps over millions of inputs, the
// full cross product of in-place programs, leak checks over 10⁵ calls)
// run only when the environment variable PEEL_FULL is set, as CI does:
//
//	PEEL_FULL=1 go test ./...
//
// go test caches results by the environment variables a test reads, so
// a cached default run is never mistaken for a full one.
package testsize
