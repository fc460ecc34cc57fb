//go:build !amd64 || purego

package cpu

// copyElems copies s into d (of equal length).
func copyElems[T any](d, s []T) { copy(d, s) }
