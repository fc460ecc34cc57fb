package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/data"
	"github.com/peel-ml/peel/transforms"
)

type params struct{ W, B *peel.Tensor }

// TestRun exports a function of a tree (its leaves named by their paths
// in the .npz file), runs the file with run, and compares with the
// function.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	f := func(p params, x *peel.Tensor) *peel.Tensor { return peel.Tanh(peel.Add(peel.MatMul(x, p.W), p.B)) }
	p := params{W: peel.Normal(peel.Key(1), peel.Float32, 4, 3), B: peel.Normal(peel.Key(2), peel.Float32, 3)}
	x := peel.Normal(peel.Key(3), peel.Float32, 5, 4)
	prog := filepath.Join(dir, "f.peel")
	if err := os.WriteFile(prog, transforms.Export2(f, p, x).Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.npz")
	w, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := data.WriteNPZ(w, map[string]*peel.Tensor{"args[0].W": p.W, "args[0].B": p.B, "args[1]": x}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	e, res, err := run(prog, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.In()) != 3 {
		t.Fatalf("In = %v", e.In())
	}
	got, want := res["y"].Float32s(), f(p, x).Float32s()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("y[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// A missing argument is named.
	w, err = os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := data.WriteNPZ(w, map[string]*peel.Tensor{"args[0].W": p.W, "args[0].B": p.B}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, _, err := run(prog, in); err == nil || !strings.Contains(err.Error(), `no array "args[1]"`) {
		t.Fatalf("without args[1]: %v", err)
	}
}
