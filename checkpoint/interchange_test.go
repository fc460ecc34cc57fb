package checkpoint_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/checkpoint"
	"github.com/peel-ml/peel/nn"
)

// TestTorchStateDict loads a torch MLP's state_dict, written by
// testdata/torch_state_dict.py from torch's own tensors, into
// nn.LinearParams (torch's weight is [out, in], peel's [in, out]) and
// reproduces torch's recorded output to float32 rounding (1e-6).
func TestTorchStateDict(t *testing.T) {
	dir := "testdata"
	if d := os.Getenv("PEEL_TORCH_DIR"); d != "" {
		dir = d // the script's files written afresh (CI)
	}
	sd, md, err := checkpoint.Read(filepath.Join(dir, "torch_mlp.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if md["source"] == "" {
		t.Errorf("metadata %v", md)
	}
	var rec struct{ X, Y [][]float64 }
	b, err := os.ReadFile(filepath.Join(dir, "torch_mlp.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	layer := func(k string) nn.LinearParams {
		return nn.LinearParams{W: peel.Transpose(sd[k+".weight"]), B: sd[k+".bias"]}
	}
	var xs []float64
	for _, r := range rec.X {
		xs = append(xs, r...)
	}
	x := peel.AsType(peel.FromFloat64s(xs, len(rec.X), len(rec.X[0])), peel.Float32)
	y := nn.Linear(layer("2"), nn.Linear(layer("0"), x).ReLU())
	got := peel.AsType(y, peel.Float64).Float64s()
	k := 0
	for _, r := range rec.Y {
		for _, want := range r {
			if math.Abs(got[k]-want) > 1e-6*(1+math.Abs(want)) {
				t.Fatalf("output %d: %v, torch %v", k, got[k], want)
			}
			k++
		}
	}
}

// TestPythonReadsPeel writes a checkpoint of every dtype and has
// testdata/read_peel.py read it with the standard library and numpy and
// compare every value. CI installs python3-numpy, so it runs there (and
// fails without it); elsewhere a machine without python3 and numpy skips
// it.
func TestPythonReadsPeel(t *testing.T) {
	py := ""
	for _, c := range []string{"/usr/bin/python3", "python3"} { // Debian's, which python3-numpy serves, first
		if p, err := exec.LookPath(c); err == nil && exec.Command(p, "-c", "import numpy").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI needs python3 with numpy (python3-numpy) for this test")
		}
		t.Skip("python3 with numpy is not installed")
	}
	dir := t.TempDir()
	m := map[string]*peel.Tensor{}
	want := map[string]any{}
	vals := []float64{-2.5, 0, 1, 3.25, 100, -0.5}
	for _, dt := range dtypes {
		x := peel.AsType(peel.FromFloat64s(vals, 2, 3), dt)
		if dt == peel.Uint8 || dt == peel.Int64 || dt == peel.Int32 {
			x = peel.AsType(peel.Abs(peel.Round(peel.FromFloat64s(vals, 2, 3))), dt)
		}
		name := dt.String()
		m[name] = x
		want[name] = map[string]any{"dtype": map[peel.DType]string{peel.Float64: "F64", peel.Float32: "F32", peel.Float16: "F16", peel.BFloat16: "BF16", peel.Int64: "I64", peel.Int32: "I32", peel.Uint8: "U8", peel.Bool: "BOOL"}[dt], "shape": []int{2, 3}, "values": peel.AsType(x, peel.Float64).Float64s()}
	}
	path := filepath.Join(dir, "all.safetensors")
	if err := checkpoint.Save(path, m); err != nil {
		t.Fatal(err)
	}
	// Names are the tree paths without the leading dot: ["f32"] for a map.
	named := map[string]any{}
	for k, v := range want {
		named[`["`+k+`"]`] = v
	}
	wb, _ := json.Marshal(named)
	wp := filepath.Join(dir, "want.json")
	os.WriteFile(wp, wb, 0o644)
	out, err := exec.Command(py, "testdata/read_peel.py", path, wp).CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("read_peel.py: %v\n%s", err, out)
	}
}
