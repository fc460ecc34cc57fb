package cpu

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCacheSizes(t *testing.T) {
	dir := t.TempDir()
	write := func(i int, level, typ, size string) {
		d := filepath.Join(dir, "index"+string(rune('0'+i)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"level": level, "type": typ, "size": size} {
			if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if l1, l2 := cacheSizes(filepath.Join(dir, "none")); l1 != 32<<10 || l2 != 256<<10 {
		t.Errorf("no sysfs: %d, %d; want the defaults 32 KiB, 256 KiB", l1, l2)
	}
	write(0, "1", "Data", "48K")
	write(1, "1", "Instruction", "32K")
	write(2, "2", "Unified", "2048K")
	write(3, "3", "Unified", "307200K")
	if l1, l2 := cacheSizes(dir); l1 != 48<<10 || l2 != 2<<20 {
		t.Errorf("Sapphire Rapids: %d, %d; want 48 KiB, 2 MiB", l1, l2)
	}
	write(2, "2", "Unified", "bogus")
	if _, l2 := cacheSizes(dir); l2 != 256<<10 {
		t.Errorf("malformed L2 size: %d, want the default", l2)
	}
	// The last level's share per CPU: none listed, then an L3 of 30 MiB
	// shared by CPUs 0-3 and 8 (index3 above has no shared_cpu_list:
	// one CPU), then an L4 beyond it.
	os.RemoveAll(dir)
	if got := llcShare(dir); got != 0 {
		t.Errorf("llcShare of no caches = %d, want 0", got)
	}
	write(0, "1", "Data", "48K")
	write(1, "2", "Unified", "2048K")
	write(2, "3", "Unified", "30720K")
	if got := llcShare(dir); got != 30<<20 {
		t.Errorf("llcShare, an L3 with no CPU list = %d, want 30 MiB", got)
	}
	os.WriteFile(filepath.Join(dir, "index2", "shared_cpu_list"), []byte("0-3,8\n"), 0o644)
	if got := llcShare(dir); got != 6<<20 {
		t.Errorf("llcShare, 30 MiB over 5 CPUs = %d, want 6 MiB", got)
	}
	write(3, "4", "Unified", "128M")
	if got := llcShare(dir); got != 128<<20 {
		t.Errorf("llcShare with an L4 = %d, want 128 MiB", got)
	}
	for _, c := range []struct {
		s    string
		want int
	}{{"0", 1}, {"0-1", 2}, {"0-3,8,10-11", 7}, {"", 0}, {"3-1", 0}, {"x", 0}, {"-1", 0}} {
		if got := countCPUs(c.s); got != c.want {
			t.Errorf("countCPUs(%q) = %d, want %d", c.s, got, c.want)
		}
	}
	for _, c := range []struct{ share, want int }{{0, 4 << 20}, {1 << 20, 4 << 20}, {16 << 20, 12 << 20}} {
		if got := ntMinBytes(c.share); got != c.want {
			t.Errorf("ntMinBytes(%d) = %d, want %d", c.share, got, c.want)
		}
	}
	for _, c := range []struct {
		s    string
		want int
	}{{"48K", 48 << 10}, {"1M", 1 << 20}, {"512", 512}, {"", 0}, {"-1K", 0}, {"99999999999M", 0}} {
		if got := parseCacheSize(c.s); got != c.want {
			t.Errorf("parseCacheSize(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

// TestGEMMBlocks checks the block sizes of the cache model on the
// machines it names, and their invariants on any cache sizes: KC a
// multiple of 16 in [64, 512], NC a multiple of NR, MC of MR (at most
// 1024).
func TestGEMMBlocks(t *testing.T) {
	for _, c := range []struct {
		nr, size, l1, l2 int
		kc, nc           int
	}{
		{32, 4, 48 << 10, 2 << 20, 192, 1344},  // AVX-512 float32 on Sapphire Rapids
		{16, 4, 32 << 10, 512 << 10, 256, 256}, // AVX2 float32 on Zen 3
		{8, 8, 32 << 10, 512 << 10, 256, 128},  // AVX2 float64 on Zen 3
	} {
		kc, nc, _ := gemmBlocks(8, c.nr, c.size, c.l1, c.l2)
		if kc != c.kc || nc != c.nc {
			t.Errorf("nr %d × %d bytes, L1 %d, L2 %d: KC %d, NC %d; want %d, %d", c.nr, c.size, c.l1, c.l2, kc, nc, c.kc, c.nc)
		}
	}
	for _, l1 := range []int{16 << 10, 32 << 10, 48 << 10, 64 << 10, 256 << 10} {
		for _, l2 := range []int{128 << 10, 256 << 10, 1 << 20, 2 << 20, 8 << 20} {
			for _, nr := range []int{8, 16, 32} {
				for _, size := range []int{4, 8} {
					for _, mr := range []int{6, 8} {
						kc, nc, mc := gemmBlocks(mr, nr, size, l1, l2)
						if kc%16 != 0 || kc < 64 || kc > 512 || nc%nr != 0 || nc < nr || mc%mr != 0 || mc < mr || mc > 1024 {
							t.Errorf("%d×%d tiles of %d bytes, L1 %d, L2 %d: KC %d, NC %d, MC %d", mr, nr, size, l1, l2, kc, nc, mc)
						}
					}
				}
			}
		}
	}
}
