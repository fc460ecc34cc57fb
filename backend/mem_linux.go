package backend

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// physicalMemory returns the total RAM in bytes, lowered to the memory
// limit of the process's cgroup (v2, /sys/fs/cgroup/memory.max) when one
// is set, or 0 when it cannot be found.
func physicalMemory() int64 {
	var info syscall.Sysinfo_t
	if syscall.Sysinfo(&info) != nil {
		return 0
	}
	unit := uint64(info.Unit)
	if unit == 0 {
		unit = 1
	}
	total := uint64(info.Totalram) * unit
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < total {
			total = n
		}
	}
	if total > 1<<62 {
		total = 1 << 62
	}
	return int64(total)
}
