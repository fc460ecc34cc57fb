package backend

import "golang.org/x/sys/unix"

// physicalMemory returns hw.memsize, the installed RAM in bytes, or 0
// when it cannot be read.
func physicalMemory() int64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil || n > 1<<62 {
		return 0
	}
	return int64(n)
}
