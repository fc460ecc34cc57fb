package cpu

import (
	"os"
	"strings"
	"testing"

	"github.com/peel-ml/peel/interp"
)

func TestChoosePath(t *testing.T) {
	for _, c := range []struct {
		env  string
		best kernelPath
		want kernelPath
		err  string
	}{
		{"", pathAVX512, pathAVX512, ""},
		{"", pathPurego, pathPurego, ""},
		{"avx2", pathAVX512, pathAVX2, ""},
		{"purego", pathAVX512, pathPurego, ""},
		{"avx512", pathAVX512, pathAVX512, ""},
		{"purego", pathPurego, pathPurego, ""},
		{"avx512", pathAVX2, 0, "supports the kernels up to avx2"},
		{"avx2", pathPurego, 0, "supports the kernels up to purego"},
		{"AVX2", pathAVX512, 0, "names no kernel path"},
		{"sse", pathAVX512, 0, "names no kernel path"},
	} {
		got, err := func() (p kernelPath, err error) {
			defer func() {
				if r := recover(); r != nil {
					e, ok := r.(*interp.Error)
					if !ok {
						t.Fatalf("PEEL_CPU=%q: panic %v, want a *peel.Error", c.env, r)
					}
					err = e
				}
			}()
			return choosePath(c.env, c.best), nil
		}()
		switch {
		case c.err == "" && err != nil:
			t.Errorf("PEEL_CPU=%q on %v: %v", c.env, c.best, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("PEEL_CPU=%q on %v: error %v, want one saying %q", c.env, c.best, err, c.err)
		case c.err == "" && got != c.want:
			t.Errorf("PEEL_CPU=%q on %v: %v, want %v", c.env, c.best, got, c.want)
		}
	}
}

// TestPathFlags checks that the kernel flags follow the chosen path: a
// test run under PEEL_CPU=avx2 must not run the AVX-512 kernels. It also
// reads PEEL_CPU itself: the backend reads it while it initializes,
// before go test records the variables a test reads, and without this
// read go test's cache would answer PEEL_CPU=purego with the results of
// a run under another path.
func TestPathFlags(t *testing.T) {
	if env := os.Getenv("PEEL_CPU"); env != "" && env != Path() {
		t.Fatalf("PEEL_CPU=%s, but the kernels run the %s path", env, Path())
	}
	if haveSIMD != (cpuPath >= pathAVX2) || haveAVX512 != (cpuPath >= pathAVX512) {
		t.Fatalf("path %v: haveSIMD %v, haveAVX512 %v", cpuPath, haveSIMD, haveAVX512)
	}
	if Path() != cpuPath.String() {
		t.Fatalf("Path() = %q, want %q", Path(), cpuPath)
	}
	t.Logf("kernel path %s", Path())
}

// TestMeasureLimits checks that the limits are positive and finite, that
// the float64 peak is at most the float32 one (as many FMAs, at most as
// many lanes), that a second call gives the memoized figures, and that
// threads below 1 panic.
func TestMeasureLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for about a second")
	}
	l := MeasureLimits(1)
	if !(l.PeakF32 > 0 && l.PeakF64 > 0 && l.Bandwidth > 0 && l.BandwidthMem > 0) || l.Threads != 1 || l.Path != Path() {
		t.Fatalf("limits %+v", l)
	}
	// The float64 loop does the same FMAs on half the lanes: allow the
	// noise of a shared machine.
	if l.PeakF64 > 1.5*l.PeakF32 {
		t.Errorf("float64 peak %v above the float32 peak %v", l.PeakF64, l.PeakF32)
	}
	if again := MeasureLimits(1); again != l {
		t.Errorf("second call %+v, want the first's %+v", again, l)
	}
	defer func() {
		if recover() == nil {
			t.Error("MeasureLimits(0) did not panic")
		}
	}()
	MeasureLimits(0)
}

// TestTriad checks the triad loop against its definition at lengths
// around its vector blocks.
func TestTriad(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 33, 64, 100, 1000} {
		a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range b {
			b[i], c[i] = float32(i), float32(3*i+1)
		}
		triad(a, b, c, 0.25)
		for i := range a {
			if want := b[i] + 0.25*c[i]; a[i] != want {
				t.Fatalf("n=%d: a[%d] = %v, want %v", n, i, a[i], want)
			}
		}
	}
}
