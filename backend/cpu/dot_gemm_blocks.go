package cpu

import (
	"os"
	"strconv"
	"strings"
)

// GEMM block sizes from the CPU's caches, not constants tuned on one
// CPU (the analytical model of BLIS): the micro-kernel's B panel (KC rows
// of NR elements) takes about half of the L1 data cache, leaving room for
// the A panel's rows and the C tile; the packed block of B (KC×NC) about
// half of the L2; the packed block of A (MC×KC, when A is not read in
// place) a quarter of it. On a 48 KiB L1 and 2 MiB L2 (Sapphire Rapids)
// the AVX-512 float32 kernel takes KC = 192, NC = 1344; on a 32 KiB L1
// and 512 KiB L2 (Zen 2/3) the AVX2 one KC = 256, NC = 256.

// cacheSizes are the per-core data cache sizes, in bytes, used for
// blocking: Linux's report of cpu0's caches, else 32 KiB and 256 KiB,
// the smallest of today's x86 servers.
var cacheL1, cacheL2 = cacheSizes("/sys/devices/system/cpu/cpu0/cache")

// sysfsCache is one cache a Linux sysfs cache directory lists (its
// index*/level, type, size and shared_cpu_list).
type sysfsCache struct {
	level int
	typ   string // "Data", "Instruction" or "Unified"
	size  int    // bytes, > 0
	cpus  int    // CPUs sharing it, ≥ 1 (1 when not listed)
}

// readCaches returns the caches dir lists, skipping any it cannot read
// or whose level or size is malformed.
func readCaches(dir string) []sysfsCache {
	var cs []sysfsCache
	for i := range 8 {
		idx := dir + "/index" + strconv.Itoa(i) + "/"
		lv, err1 := os.ReadFile(idx + "level")
		typ, err2 := os.ReadFile(idx + "type")
		size, err3 := os.ReadFile(idx + "size")
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		l, err := strconv.Atoi(strings.TrimSpace(string(lv)))
		n := parseCacheSize(strings.TrimSpace(string(size)))
		if err != nil || n <= 0 {
			continue
		}
		c := sysfsCache{level: l, typ: strings.TrimSpace(string(typ)), size: n, cpus: 1}
		if list, err := os.ReadFile(idx + "shared_cpu_list"); err == nil {
			c.cpus = max(countCPUs(strings.TrimSpace(string(list))), 1)
		}
		cs = append(cs, c)
	}
	return cs
}

// cacheSizes reads the L1 data and L2 sizes from a Linux sysfs cache
// directory, with the defaults for any it cannot read or that are
// implausible.
func cacheSizes(dir string) (l1, l2 int) {
	l1, l2 = 32<<10, 256<<10
	for _, c := range readCaches(dir) {
		if c.typ != "Data" && c.typ != "Unified" {
			continue
		}
		switch c.level {
		case 1:
			l1 = min(max(c.size, 16<<10), 256<<10)
		case 2:
			l2 = min(max(c.size, 128<<10), 8<<20)
		}
	}
	return l1, l2
}

// llcShare returns the bytes of the last-level cache (the highest level
// a sysfs cache directory lists) per CPU sharing it (its
// shared_cpu_list), or 0 when the directory does not say.
func llcShare(dir string) int {
	best, level := 0, 0
	for _, c := range readCaches(dir) {
		if c.typ != "Instruction" && c.level > level {
			best, level = c.size/c.cpus, c.level
		}
	}
	return best
}

// countCPUs counts the CPUs of a sysfs CPU list ("0-3,8,10-11"), 0 when
// it is malformed.
func countCPUs(list string) int {
	n := 0
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

// parseCacheSize parses sysfs's "48K", "2048K", "1M" (0 when malformed).
func parseCacheSize(s string) int {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		s, mult = s[:len(s)-1], 1<<10
	case strings.HasSuffix(s, "M"):
		s, mult = s[:len(s)-1], 1<<20
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<30/mult {
		return 0
	}
	return n * mult
}

// gemmBlocks returns the contracting block kc, the column block nc and
// the row block mc of a packed GEMM whose micro-kernel tiles are mr
// rows by nr elements of size bytes, for caches of l1 and l2 bytes.
func gemmBlocks(mr, nr, size, l1, l2 int) (kc, nc, mc int) {
	kc = min(max(l1/2/(nr*size)&^15, 64), 512)
	nc = min(max(l2/2/(kc*size)/nr*nr, nr), 4096)
	mc = min(max(l2/4/(kc*size)/mr*mr, mr), 1024/mr*mr)
	return kc, nc, mc
}
