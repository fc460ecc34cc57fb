package checkpoint_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/checkpoint"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/tree"
	"pgregory.net/rapid"
)

var dtypes = []peel.DType{peel.Float64, peel.Float32, peel.Float16, peel.BFloat16, peel.Int64, peel.Int32, peel.Uint8, peel.Bool}

// randTensor is a tensor of dt and shape with values drawn by t.
func randTensor(t *rapid.T, dt peel.DType, shape []int, label string) *peel.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	vs := rapid.SliceOfN(rapid.Float64Range(-1e3, 1e3), n, n).Draw(t, label)
	x := peel.FromFloat64s(vs, shape...)
	switch dt {
	case peel.Int64, peel.Int32, peel.Uint8:
		x = peel.Abs(peel.Round(x))
	case peel.Bool:
		x = peel.Greater(x, 0.0)
	}
	return peel.AsType(x, dt)
}

func same(a, b *peel.Tensor) bool {
	if a.DType() != b.DType() || !slices.Equal(a.Shape(), b.Shape()) {
		return false
	}
	x, y := peel.AsType(a, peel.Float64).Float64s(), peel.AsType(b, peel.Float64).Float64s()
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			return false
		}
	}
	return true
}

// TestRoundTrip: random trees (maps of tensors of every dtype, random
// shapes including scalars and empty ones, and views) come back from
// Save and Load bit for bit, and Read finds them by name.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "leaves")
		m := map[string]*peel.Tensor{}
		for i := range n {
			dt := rapid.SampledFrom(dtypes).Draw(rt, "dtype")
			shape := rapid.SliceOfN(rapid.IntRange(0, 4), 0, 3).Draw(rt, "shape")
			x := randTensor(rt, dt, shape, "values")
			if len(shape) == 2 && rapid.Bool().Draw(rt, "transpose") {
				x = peel.Transpose(x) // a view: saved row-major
			}
			m[string(rune('a'+i))] = x
		}
		path := filepath.Join(dir, "t.safetensors")
		if err := checkpoint.Save(path, m); err != nil {
			rt.Fatal(err)
		}
		got, err := checkpoint.Load(path, m)
		if err != nil {
			rt.Fatal(err)
		}
		for k, x := range m {
			if !same(got[k], x) {
				rt.Fatalf("leaf %s: got %v, want %v", k, got[k], x)
			}
		}
		all, md, err := checkpoint.Read(path)
		if err != nil {
			rt.Fatal(err)
		}
		if len(all) != len(m) || md["format"] != "peel" || md["format_version"] != checkpoint.FormatVersion {
			rt.Fatalf("Read: %d tensors, metadata %v", len(all), md)
		}
		for k, x := range m {
			if !same(all[`["`+k+`"]`], x) {
				rt.Fatalf("Read: %s differs", k)
			}
		}
	})
}

type model struct {
	L1, L2 nn.LinearParams
	BN     nn.BatchNormState
}

// TestModelAndOptimizerState: a struct of layers, batch-norm running
// statistics and an Adam state round-trip, named by their paths.
func TestModelAndOptimizerState(t *testing.T) {
	ks := peel.SplitKeys(peel.Key(1), 2)
	_, bn := nn.InitBatchNorm(peel.Float32, 4)
	p := model{L1: nn.InitLinear(ks[0], peel.Float32, 3, 4), L2: nn.InitLinear(ks[1], peel.Float32, 4, 2), BN: bn}
	opt := optim.Adam[model](1e-3)
	st := opt.Init(p)
	type ckpt struct {
		P model
		S optim.State
	}
	c := ckpt{p, st}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := checkpoint.Save(path, c, map[string]string{"step": "7"}); err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Load(path, c)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range tree.Leaves(c) {
		if !same(tree.Leaves(got)[i], x) {
			t.Errorf("leaf %s differs", tree.Paths(c)[i])
		}
	}
	f, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata["step"] != "7" || !strings.Contains(strings.Join(f.Names(), " "), "P.L1.W") {
		t.Errorf("metadata %v, names %v", f.Metadata, f.Names())
	}
}

// TestLoadReportsEveryMismatch: a missing leaf, an extra tensor, another
// shape and another dtype are all named in one *peel.Error.
func TestLoadReportsEveryMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	saved := map[string]*peel.Tensor{"a": peel.Zeros(peel.Float32, 2, 3), "b": peel.Zeros(peel.Float64, 4), "c": peel.Zeros(peel.Int64, 1), "extra": peel.Zeros(peel.Float32)}
	if err := checkpoint.Save(path, saved); err != nil {
		t.Fatal(err)
	}
	like := map[string]*peel.Tensor{"a": peel.Zeros(peel.Float32, 3, 2), "b": peel.Zeros(peel.Float32, 4), "c": peel.Zeros(peel.Int64, 1), "missing": peel.Zeros(peel.Float32, 5)}
	_, err := checkpoint.Load(path, like)
	var pe *peel.Error
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *peel.Error", err)
	}
	for _, want := range []string{`["a"]: the file has f32[2 3], want f32[3,2]`, `["b"]: the file has f64[4], want f32[4]`, `["missing"]: missing from the file`, `"[\"extra\"]": in the file`, "4 differences"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}

// TestCorruptFiles: truncations at every length and altered headers are
// *peel.Errors, never panics.
func TestCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ok.safetensors")
	m := map[string]*peel.Tensor{"w": peel.Ones(peel.Float32, 3, 2), "b": peel.Ones(peel.Bool, 3)}
	if err := checkpoint.Save(path, m); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	bad := filepath.Join(dir, "bad.safetensors")
	for n := 0; n < len(good); n++ {
		os.WriteFile(bad, good[:n], 0o644)
		if _, err := checkpoint.Load(bad, m); err == nil {
			t.Fatalf("a file cut to %d of %d bytes loaded", n, len(good))
		} else if _, ok := err.(*peel.Error); !ok {
			t.Fatalf("cut to %d bytes: %T %v, want a *peel.Error", n, err, err)
		}
	}
	// A BOOL byte that is neither 0 nor 1 ("b" comes first in the data).
	b := append([]byte(nil), good...)
	b[8+int(binary.LittleEndian.Uint64(b))] = 7
	os.WriteFile(bad, b, 0o644)
	if _, err := checkpoint.Load(bad, m); err == nil || !strings.Contains(err.Error(), "not 0 or 1") {
		t.Errorf("a BOOL byte of 7: %v", err)
	}
}

// FuzzOpen: no input panics, allocates beyond the file's size or reads
// past it.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.safetensors")
	checkpoint.Save(path, map[string]*peel.Tensor{"w": peel.Ones(peel.Float16, 2, 2), "i": peel.Ones(peel.Int32, 3)})
	seed, _ := os.ReadFile(path)
	f.Add(seed)
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	// A name that is not UTF-8, and offsets that are not a pair.
	f.Add(safetensors("{\"a\xff\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", make([]byte, 8)))
	f.Add(safetensors(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8,8]}}`, make([]byte, 8)))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := checkpoint.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if _, ok := err.(*peel.Error); !ok {
				t.Fatalf("%T: %v, want a *peel.Error", err, err)
			}
			return
		}
		total := 0
		for _, name := range c.Names() {
			x, err := c.Tensor(name)
			if err != nil {
				if _, ok := err.(*peel.Error); !ok {
					t.Fatalf("%T: %v, want a *peel.Error", err, err)
				}
				continue
			}
			total += x.Size() * x.DType().Size()
		}
		if total > len(b) {
			t.Fatalf("read %d bytes of tensors from %d bytes", total, len(b))
		}
	})
}

// TestCrashDuringSave: a process killed while it saves (again and again)
// leaves the target path holding a whole checkpoint, the old one or a
// new one, never a partial file.
func TestCrashDuringSave(t *testing.T) {
	if os.Getenv("PEEL_CHECKPOINT_CRASH_CHILD") != "" {
		path := os.Getenv("PEEL_CHECKPOINT_CRASH_CHILD")
		x := peel.Ones(peel.Float64, 1<<20) // 8 MB per save
		for i := 0; ; i++ {
			checkpoint.Save(path, map[string]*peel.Tensor{"x": peel.Mul(x, float64(i))})
		}
	}
	path := filepath.Join(t.TempDir(), "c.safetensors")
	like := map[string]*peel.Tensor{"x": peel.Zeros(peel.Float64, 1<<20)}
	if err := checkpoint.Save(path, like); err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCrashDuringSave$")
		cmd.Env = append(os.Environ(), "PEEL_CHECKPOINT_CRASH_CHILD="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+100*k) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		got, err := checkpoint.Load(path, like)
		if err != nil {
			t.Fatalf("after a kill mid-save: %v", err)
		}
		v := got["x"].Float64s()
		if v[0] != v[len(v)-1] {
			t.Fatalf("after a kill mid-save: a mixed checkpoint (%v … %v)", v[0], v[len(v)-1])
		}
	}
	// The next Save removes the temporaries the killed ones left (where
	// advisory locks tell them from one being written: unix).
	if err := checkpoint.Save(path, like); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".c.safetensors.tmp*"))
	if runtime.GOOS != "windows" && len(left) != 0 {
		t.Fatalf("temporaries left after a Save: %v", left)
	}
}
