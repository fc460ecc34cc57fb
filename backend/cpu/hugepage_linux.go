package cpu

import (
	"syscall"
	"unsafe"
)

// hugePageMin is the buffer size from which makeBuf asks Linux for
// transparent huge pages (where they are enabled in madvise mode, the
// default of most distributions): a first write then faults in 2 MiB at
// a time instead of 4 KiB, which makes filling a fresh multi-GiB buffer
// several times faster (numpy advises its large arrays the same way).
const hugePageMin = 64 << 20

// adviseHuge advises the whole 2 MiB pages inside the n bytes at p as
// huge-page candidates. The advice only affects how pages are faulted in;
// it is ignored where transparent huge pages are off.
func adviseHuge(p unsafe.Pointer, n int) {
	const huge = 2 << 20
	lo := (uintptr(p) + huge - 1) &^ (huge - 1)
	hi := (uintptr(p) + uintptr(n)) &^ (huge - 1)
	if hi <= lo {
		return
	}
	start := (*byte)(unsafe.Add(p, lo-uintptr(p)))
	_ = syscall.Madvise(unsafe.Slice(start, hi-lo), syscall.MADV_HUGEPAGE)
}
