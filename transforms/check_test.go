package transforms_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

type checkParams struct {
	W, B *T
}

type checkOut struct {
	Loss, Hidden *T
}

// checkModel is a small model: a layer, tanh, an in-place update of a
// copy, a loss; float32 parameters (Check works in float64).
func checkModel(p checkParams) checkOut {
	x := peel.FromFloat64s([]float64{0.5, -1, 2}, 1, 3)
	h := peel.Tanh(peel.Add(peel.MatMul(x, p.W), p.B))
	c := peel.Clone(h)
	peel.MulInPlace(c, peel.Scalar(3.0))
	return checkOut{Loss: peel.Sum(peel.Square(c)), Hidden: h}
}

func checkArgs() checkParams {
	return checkParams{
		W: peel.AsType(peel.Normal(peel.Key(7), peel.Float64, 3, 4), peel.Float32),
		B: peel.AsType(peel.FromFloat64s([]float64{0.1, -0.2, 0.3, 0}), peel.Float32),
	}
}

// TestCheckPasses runs every check on a correct model: all run and
// agree.
func TestCheckPasses(t *testing.T) {
	rep := transforms.Check(checkModel, checkArgs())
	if !rep.OK() || len(rep.Results) != 7 {
		t.Fatalf("a correct model:\n%v", rep)
	}
	for _, r := range rep.Results {
		if r.Skipped != "" || r.Panic != nil || r.Leaf == "" {
			t.Errorf("%s did not run: %v", r.Name, r)
		}
	}
}

// result returns rep's result of the given check.
func result(t *testing.T, rep *transforms.CheckReport, name string) transforms.CheckResult {
	t.Helper()
	for _, r := range rep.Results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no %s in the report:\n%v", name, rep)
	return transforms.CheckResult{}
}

// TestCheckFindsWrongRules: a custom VJP rule wrong for one leaf fails
// VJP there (and not at the other leaf's error size), and a custom JVP
// rule off by a factor fails JVP; the report names the leaf.
func TestCheckFindsWrongRules(t *testing.T) {
	good := func(p checkParams) *T { return peel.Sum(peel.Mul(peel.Sin(p.W), p.B)) }
	wrongVJP := transforms.CustomVJP(good,
		func(p checkParams) (*T, checkParams) { return good(p), p },
		func(p checkParams, ct *T) checkParams {
			gw := peel.Mul(peel.Mul(peel.Cos(p.W), p.B), ct)
			gb := peel.Mul(peel.Sum(peel.Sin(p.W), 0), ct)
			return checkParams{W: gw, B: peel.Mul(gb, peel.Scalar(2.0))} // B's is doubled
		})
	args := checkArgs()
	rep := transforms.Check(wrongVJP, args, transforms.CheckSkip("JVP", "Jacobians"))
	v := result(t, rep, "VJP")
	if !v.Failed || !strings.Contains(v.Leaf, "B") || rep.OK() {
		t.Fatalf("a VJP rule doubling B's cotangent:\n%v", rep)
	}
	if !strings.Contains(rep.String(), "VJP") || !strings.Contains(rep.String(), "FAILED") {
		t.Errorf("the report does not say VJP failed:\n%v", rep)
	}
	// The same rule with B's cotangent right passes.
	right := transforms.CustomVJP(good,
		func(p checkParams) (*T, checkParams) { return good(p), p },
		func(p checkParams, ct *T) checkParams {
			return checkParams{W: peel.Mul(peel.Mul(peel.Cos(p.W), p.B), ct), B: peel.Mul(peel.Sum(peel.Sin(p.W), 0), ct)}
		})
	if rep := transforms.Check(right, args, transforms.CheckSkip("JVP", "Jacobians")); !rep.OK() {
		t.Fatalf("a right VJP rule:\n%v", rep)
	}
	wrongJVP := transforms.CustomJVP(func(x *T) *T { return peel.Exp(x) }, func(x, tx *T) (*T, *T) {
		y := peel.Exp(x)
		return y, peel.Mul(peel.Mul(y, tx), peel.Scalar(1.01))
	})
	rep = transforms.Check(wrongJVP, peel.FromFloat64s([]float64{0.5, -1}))
	if j := result(t, rep, "JVP"); !j.Failed || j.Panic != nil {
		t.Fatalf("a JVP rule 1%% off:\n%v", rep)
	}
}

// TestCheckKeepsPanics: a function that reads a value (Item) works
// eagerly but not under the transforms that trace it; each such check
// fails with the error, and Check returns.
func TestCheckKeepsPanics(t *testing.T) {
	f := func(x *T) *T {
		if peel.Sum(x).Item() > 0 {
			return peel.Square(x)
		}
		return x
	}
	rep := transforms.Check(f, peel.FromFloat64s([]float64{1, 2}))
	for _, name := range []string{"Vmap", "Grad"} {
		if r := result(t, rep, name); !r.Failed || r.Panic == nil {
			t.Errorf("%s of a function reading a value: %v", name, r)
		}
	}
	if rep.OK() {
		t.Fatalf("the report is OK:\n%v", rep)
	}
}

// TestCheckNonFloatLeaves: an integer leaf gets no derivative, is
// batched as it is, and the checks pass.
func TestCheckNonFloatLeaves(t *testing.T) {
	type in struct{ X, Idx *T }
	f := func(a in) *T { return peel.Sum(peel.Take(peel.Exp(a.X), a.Idx, 0)) }
	rep := transforms.Check(f, in{X: peel.FromFloat64s([]float64{0.1, 0.2, 0.3}), Idx: peel.FromInt64s([]int64{2, 0, 2})})
	if !rep.OK() {
		t.Fatalf("a function of a float and an integer leaf:\n%v", rep)
	}
}

// TestCheckMixedValue: a value with a float32 leaf and an integer leaf
// (an argmax): derivatives of the float one only, in its own dtype (a
// larger step of the differences, and a tolerance for float32 set).
func TestCheckMixedValue(t *testing.T) {
	type out struct{ Y, I *T }
	f := func(x *T) out {
		return out{Y: peel.AsType(peel.Mul(x, x), peel.Float32), I: peel.ArgMax(x, 0)}
	}
	rep := transforms.Check(f, peel.FromFloat64s([]float64{0.5, -1, 2}), transforms.CheckTolerance(1e-2, 1e-6))
	if !rep.OK() {
		t.Fatalf("a value of a float32 and an integer leaf:\n%v", rep)
	}
}

// TestCheckOptions checks CheckSkip, CheckTolerance and their errors.
func TestCheckOptions(t *testing.T) {
	rep := transforms.Check(peel.Exp, peel.FromFloat64s([]float64{1}), transforms.CheckSkip("Jacobians", "Compile"))
	if r := result(t, rep, "Jacobians"); r.Skipped == "" || r.Failed {
		t.Errorf("a skipped check: %v", r)
	}
	// Central differences are good to about 1e-10 here: a tolerance of
	// 1e-14 fails them.
	rep = transforms.Check(peel.Exp, peel.FromFloat64s([]float64{1, 2}), transforms.CheckTolerance(1e-14, 1e-9))
	if r := result(t, rep, "VJP"); !r.Failed || r.Panic != nil {
		t.Errorf("VJP held to 1e-14 against differences: %v", r)
	}
	wantError(t, func() { transforms.CheckSkip("Hessian") }, "Hessian")
	wantError(t, func() { transforms.CheckTolerance(0, 1) }, "positive")
	wantError(t, func() { transforms.Check[*T, *T](nil, peel.Scalar(1.0)) }, "nil")
	wantError(t, func() { transforms.Check(func(x *T) *T { return peel.Reshape(x, 5) }, peel.Zeros(peel.Float64, 2)) }, "peel.Reshape")
}

// ExampleCheck checks a function under every transform and prints the
// report's verdict.
func ExampleCheck() {
	f := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(peel.Sin(x), x)) }
	rep := transforms.Check(f, peel.FromFloat64s([]float64{0.5, -1, 2}))
	fmt.Println(rep.OK(), len(rep.Results))
	// Output: true 7
}

// TestCheckInPlace: a function writing into its argument is checked on
// copies: every check runs from the same values, and the caller's
// tensors are left as they were.
func TestCheckInPlace(t *testing.T) {
	f := func(x *T) *T {
		peel.MulInPlace(x, peel.Sin(x))
		return peel.Sum(peel.Exp(x))
	}
	x := f64(0.5, -1, 2)
	rep := transforms.Check(f, x)
	if !rep.OK() {
		t.Fatalf("a function writing into its argument:\n%v", rep)
	}
	near(t, "the caller's argument", x.Float64s(), []float64{0.5, -1, 2}, 0)
}
