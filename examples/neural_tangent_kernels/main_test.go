package main

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/reftest"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/nn"
)

// scaled is synth.Data(seed, shape...) / √fanIn: uniform-like in
// ±1/√fanIn, the range of torch's default init (nn.TorchInit).
func scaled(seed float64, fanIn int, shape ...int) *peel.Tensor {
	return synth.Data(seed, shape...).Div(math.Sqrt(float64(fanIn)))
}

// TestAgainstTorch runs the CNN and both NTK methods, with every compute
// mode, in float64 on deterministic weights and images, and checks them
// against PyTorch's kernel built from per-output autograd gradients
// (testdata/gen_reference.py), to float64 round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	xTrain, xTest := synth.Data(1, 4, 3, 8, 8), synth.Data(2, 2, 3, 8, 8)
	params := CNN{
		Conv1: nn.Conv2DParams{W: scaled(3, 27, 32, 3, 3, 3), B: scaled(4, 27, 32)},
		Conv2: nn.Conv2DParams{W: scaled(5, 288, 32, 32, 3, 3), B: scaled(6, 288, 32)},
		Conv3: nn.Conv2DParams{W: scaled(7, 288, 32, 32, 3, 3), B: scaled(8, 288, 32)},
		FC:    nn.LinearParams{W: scaled(9, 128, 128, 10), B: scaled(10, 128, 10)},
	}
	const rtol, atol = 1e-10, 1e-13
	reftest.Close(t, "forward", forward(params, xTest), ref["out_test"], rtol, atol)
	for _, c := range []struct {
		name   string
		got    *peel.Tensor
		refKey string
	}{
		{"jacobian contraction full", empiricalNTKJacobianContraction(fnetSingle, params, xTrain, xTest, "full"), "full"},
		{"jacobian contraction trace", empiricalNTKJacobianContraction(fnetSingle, params, xTrain, xTest, "trace"), "trace"},
		{"jacobian contraction diagonal", empiricalNTKJacobianContraction(fnetSingle, params, xTrain, xTest, "diagonal"), "diagonal"},
		{"result_from_jacobian_contraction", empiricalNTKJacobianContraction(fnetSingle, params, xTest, xTrain, "full"), "test"},
		{"result_from_ntk_vps", empiricalNTKNTKVPs(fnetSingle, params, xTest, xTrain, "full"), "test"},
		{"ntk vps trace", empiricalNTKNTKVPs(fnetSingle, params, xTest, xTrain, "trace"), "test_trace"},
		{"ntk vps diagonal", empiricalNTKNTKVPs(fnetSingle, params, xTest, xTrain, "diagonal"), "test_diagonal"},
	} {
		reftest.Close(t, c.name, c.got, ref[c.refKey], rtol, atol)
	}
}

// TestMainShapes runs main's float32 model, as torch's default dtype, once
// on a small batch: the two methods agree to float32 round-off.
func TestMainShapes(t *testing.T) {
	keys := peel.SplitKeys(peel.Key(0), 3)
	xTrain := peel.Normal(keys[0], peel.Float32, 3, 3, 8, 8)
	xTest := peel.Normal(keys[1], peel.Float32, 2, 3, 8, 8)
	params := newCNN(keys[2])
	jc := empiricalNTKJacobianContraction(fnetSingle, params, xTest, xTrain, "full")
	vps := empiricalNTKNTKVPs(fnetSingle, params, xTest, xTrain, "full")
	if got := jc.TypeString(); got != "f32[2,3,10,10]" {
		t.Fatalf("NTK %s, want f32[2,3,10,10]", got)
	}
	scale := jc.Abs().Max().Item()
	if diff := jc.Sub(vps).Abs().Max().Item(); !(diff <= 1e-5*scale) {
		t.Errorf("the two methods differ by %g (NTK scale %g)", diff, scale)
	}
}

// BenchmarkTutorial times main's four NTK computations at main's sizes, in
// float32: 20 train and 5 test images 3×8×8, the CNN 3→32→32→32 channels
// and a linear layer 128→10, from main's random init; the Jacobian
// contraction (train × test) with compute "full" and "trace", then
// (test × train) "full" by the Jacobian contraction and by NTK-vector
// products. testdata/time_torch.py times the same four calls in PyTorch.
func BenchmarkTutorial(b *testing.B) {
	keys := peel.SplitKeys(peel.Key(0), 3)
	xTrain := peel.Normal(keys[0], peel.Float32, 20, 3, 8, 8)
	xTest := peel.Normal(keys[1], peel.Float32, 5, 3, 8, 8)
	params := newCNN(keys[2])
	for b.Loop() {
		empiricalNTKJacobianContraction(fnetSingle, params, xTrain, xTest, "full")
		empiricalNTKJacobianContraction(fnetSingle, params, xTrain, xTest, "trace")
		empiricalNTKJacobianContraction(fnetSingle, params, xTest, xTrain, "full")
		empiricalNTKNTKVPs(fnetSingle, params, xTest, xTrain, "full")
	}
}
