//go:build !linux

package cpu

import "unsafe"

const hugePageMin = 64 << 20

// adviseHuge does nothing off Linux.
func adviseHuge(unsafe.Pointer, int) {}
