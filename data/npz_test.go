package data_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/data"
)

// numpyPython returns a python3 that imports numpy (Debian's first), or
// skips the test (fails it under CI, which installs python3-numpy).
func numpyPython(t *testing.T) string {
	t.Helper()
	for _, c := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(c); err == nil && exec.Command(p, "-c", "import numpy").Run() == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI needs python3 with numpy (python3-numpy) for this test")
	}
	t.Skip("python3 with numpy is not installed")
	return ""
}

// TestNPZ: WriteNPZ's archive reads back with ReadNPZ and with
// numpy.load (every value compared in Python), and an archive numpy
// writes compressed (savez_compressed) reads with ReadNPZ.
func TestNPZ(t *testing.T) {
	m := map[string]*peel.Tensor{
		"w": peel.FromFloat32s([]float32{1.5, -2, 3.25, 0}, 2, 2),
		"b": peel.FromFloat64s([]float64{0.1, 0.2, 0.3}),
		"n": peel.FromInt64s([]int64{7, -8}),
		"m": peel.Greater(peel.FromFloat64s([]float64{1, -1, 2}), 0.0),
		"s": peel.Scalar(2.5),
		"i": peel.FromInt32s([]int32{-5, 2147483647}),
		"u": peel.FromUint8s([]uint8{0, 255, 9}),
		"h": peel.AsType(peel.FromFloat64s([]float64{0.5, -65504}), peel.Float16),
	}
	var buf bytes.Buffer
	if err := data.WriteNPZ(&buf, m); err != nil {
		t.Fatal(err)
	}
	back, err := data.ReadNPZ(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for k, x := range m {
		y := back[k]
		if y == nil || y.DType() != x.DType() || !slices.Equal(y.Shape(), x.Shape()) ||
			!slices.Equal(peel.AsType(y, peel.Float64).Float64s(), peel.AsType(x, peel.Float64).Float64s()) {
			t.Fatalf("%s: read back %v, wrote %v", k, y, x)
		}
	}
	py := numpyPython(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "peel.npz")
	os.WriteFile(path, buf.Bytes(), 0o644)
	check := `import sys, numpy as np
z = np.load(sys.argv[1])
assert z["w"].dtype == np.float32 and z["w"].tolist() == [[1.5, -2.0], [3.25, 0.0]], z["w"]
assert z["b"].dtype == np.float64 and z["b"].tolist() == [0.1, 0.2, 0.3]
assert z["n"].dtype == np.int64 and z["n"].tolist() == [7, -8]
assert z["m"].dtype == np.bool_ and z["m"].tolist() == [True, False, True]
assert z["s"].shape == () and float(z["s"]) == 2.5
assert z["i"].dtype == np.int32 and z["i"].tolist() == [-5, 2147483647]
assert z["u"].dtype == np.uint8 and z["u"].tolist() == [0, 255, 9]
assert z["h"].dtype == np.float16 and z["h"].tolist() == [0.5, -65504.0]
a = np.arange(6, dtype=np.float64).reshape(2, 3)
np.savez_compressed(sys.argv[2], a=a, k=np.array([3, 1], dtype=np.int64),
    fortran=np.asfortranarray(a), transposed=a.T, big=a.astype(">f8"), bigi=np.array([-7, 300000], dtype=">i4"),
    i4=np.array([-1, 2], dtype=np.int32), u1=np.array([250, 3], dtype=np.uint8), f2=np.array([1.5, -0.25], dtype=np.float16))
print("ok")`
	out2 := filepath.Join(dir, "numpy.npz")
	if out, err := exec.Command(py, "-c", check, path, out2).CombinedOutput(); err != nil || string(out) != "ok\n" {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	f, err := os.ReadFile(out2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := data.ReadNPZ(bytes.NewReader(f), int64(len(f)))
	if err != nil {
		t.Fatal(err)
	}
	if a := got["a"]; a == nil || !slices.Equal(a.Shape(), []int{2, 3}) || !slices.Equal(a.Float64s(), []float64{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("a: %v", a)
	}
	if k := got["k"]; k == nil || !slices.Equal(k.Int64s(), []int64{3, 1}) {
		t.Fatalf("k: %v", k)
	}
	// numpy's Fortran-order, transposed and big-endian arrays, and the
	// dtypes peel shares with it, read as numpy means them.
	for name, want := range map[string]struct {
		shape []int
		vals  []float64
		dt    peel.DType
	}{
		"fortran":    {[]int{2, 3}, []float64{0, 1, 2, 3, 4, 5}, peel.Float64},
		"transposed": {[]int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, peel.Float64},
		"big":        {[]int{2, 3}, []float64{0, 1, 2, 3, 4, 5}, peel.Float64},
		"bigi":       {[]int{2}, []float64{-7, 300000}, peel.Int32},
		"i4":         {[]int{2}, []float64{-1, 2}, peel.Int32},
		"u1":         {[]int{2}, []float64{250, 3}, peel.Uint8},
		"f2":         {[]int{2}, []float64{1.5, -0.25}, peel.Float16},
	} {
		x := got[name]
		if x == nil || x.DType() != want.dt || !slices.Equal(x.Shape(), want.shape) || !slices.Equal(peel.AsType(x, peel.Float64).Float64s(), want.vals) {
			t.Fatalf("numpy's %s: read %v, want %v%v %v", name, x, want.dt, want.shape, want.vals)
		}
	}
}
