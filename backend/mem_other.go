//go:build !linux && !darwin

package backend

// physicalMemory returns 0: the physical memory is not known on this
// system, so DefaultMaxAllocBytes falls back to a fixed limit.
func physicalMemory() int64 { return 0 }
