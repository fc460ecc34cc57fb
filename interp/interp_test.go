package interp_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

func f64(data []float64, shape ...int) *interp.Tensor {
	be := cpu.New()
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: shape})
}

func bcast(x *interp.Tensor, shape ...int) *interp.Tensor {
	dims := make([]int, x.Rank())
	for i := range dims {
		dims[i] = len(shape) - x.Rank() + i
	}
	return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: dims}, x)
}

// affine computes tanh(x*w + b) with b broadcast along rows.
func affine(x, w, b *interp.Tensor) *interp.Tensor {
	y := interp.Bind1(prims.Mul, nil, x, w)
	y = interp.Bind1(prims.Add, nil, y, bcast(b, x.Shape()...))
	return interp.Bind1(prims.Tanh, nil, y)
}

func wantErr(t *testing.T, f func(), substr ...string) *interp.Error {
	t.Helper()
	err := interp.Catch(f)
	var e *interp.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *interp.Error, got %v", err)
	}
	for _, s := range substr {
		if !strings.Contains(e.Error(), s) {
			t.Errorf("error %q does not mention %q", e.Error(), s)
		}
	}
	return e
}

func TestTraceRecordsAndEvaluates(t *testing.T) {
	b := f64([]float64{0.5, -1, 2}, 3)
	g := interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		if a[0].IsConcrete() {
			t.Error("argument is concrete inside Trace")
		}
		y := affine(a[0], a[1], b)
		if y.IsConcrete() {
			t.Error("result computed eagerly inside Trace")
		}
		dead := interp.Bind1(prims.Exp, nil, y) // unused: removed by DCE
		_ = dead
		return []*interp.Tensor{y}
	}, []*interp.Tensor{f64(make([]float64, 6), 2, 3), f64(make([]float64, 6), 2, 3)})

	if len(g.In) != 2 || len(g.Consts) != 1 || len(g.Out) != 1 {
		t.Fatalf("graph has %d inputs, %d consts, %d outputs", len(g.In), len(g.Consts), len(g.Out))
	}
	// The broadcast of the captured b involves no tracer, so it runs
	// eagerly and its result is the constant.
	want := `{ lambda a:f64[2,3] ; b:f64[2,3] c:f64[2,3] .
  let d:f64[2,3] = mul b c
      e:f64[2,3] = add d a
      f:f64[2,3] = tanh e
  in (f) }`
	if got := g.String(); got != want {
		t.Errorf("graph:\n%s\nwant:\n%s", got, want)
	}

	x := f64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	w := f64([]float64{1, 0.5, -1, 2, 0, 1}, 2, 3)
	got := g.Eval(x, w)[0].Float64s()
	direct := affine(x, w, b).Float64s()
	for i := range got {
		if math.Abs(got[i]-direct[i]) > 1e-15 {
			t.Fatalf("graph eval %v, direct %v", got, direct)
		}
	}
	wantErr(t, func() { g.Eval(x) }, "takes 2 inputs")
	wantErr(t, func() { g.Eval(x, f64([]float64{1, 2}, 2)) }, "input 1 must be f64[2,3]")
}

func TestTraceNested(t *testing.T) {
	// A graph evaluated inside another trace is re-staged: Eval uses Bind.
	inner := interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{interp.Bind1(prims.Sin, nil, a[0])}
	}, []*interp.Tensor{f64([]float64{0}, 1)})
	outer := interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		y := inner.Eval(a[0])[0]
		return []*interp.Tensor{interp.Bind1(prims.Neg, nil, y)}
	}, []*interp.Tensor{f64([]float64{0}, 1)})
	if n := len(outer.Eqns); n != 2 {
		t.Fatalf("outer graph has %d equations, want 2:\n%v", n, outer)
	}
	got := outer.Eval(f64([]float64{1}, 1))[0].Float64s()[0]
	if math.Abs(got+math.Sin(1)) > 1e-15 {
		t.Errorf("got %v", got)
	}
}

func TestTraceMutation(t *testing.T) {
	x := f64([]float64{1, 2}, 2)
	g := interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		y := interp.Bind1(prims.Copy, nil, a[0])
		interp.Bind(prims.AddInPlace, nil, y, a[0])
		return []*interp.Tensor{y}
	}, []*interp.Tensor{x})
	if !strings.Contains(g.String(), "add_") {
		t.Errorf("mutation not recorded:\n%v", g)
	}
	if got := g.Eval(x)[0].Float64s(); got[0] != 2 || got[1] != 4 {
		t.Errorf("got %v", got)
	}
	if got := x.Float64s(); got[0] != 1 {
		t.Errorf("input changed: %v", got)
	}
	// A captured concrete tensor cannot be written by the staged program.
	c := f64([]float64{0, 0}, 2)
	wantErr(t, func() {
		interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
			interp.Bind(prims.CopyInPlace, nil, c, a[0])
			return a
		}, []*interp.Tensor{x})
	}, "copy_", "Functionalize", "[in trace]")
}

func TestEscapedTracer(t *testing.T) {
	var leaked *interp.Tensor
	x := f64([]float64{1, 2}, 2)
	interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		leaked = interp.Bind1(prims.Exp, nil, a[0])
		return []*interp.Tensor{leaked}
	}, []*interp.Tensor{x})
	wantErr(t, func() { interp.Bind1(prims.Add, nil, leaked, x) }, "escaped tracer", "add")
	wantErr(t, func() { leaked.Float64s() }, "traced tensor")
}

func TestTracedReadIsError(t *testing.T) {
	wantErr(t, func() {
		interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
			_ = a[0].Item()
			return a
		}, []*interp.Tensor{f64([]float64{1}, 1)})
	}, "Item", "traced tensor", "[in trace]")
}

func TestBindErrors(t *testing.T) {
	x := f64([]float64{1, 2}, 2)
	y := f64([]float64{1, 2, 3}, 3)
	e := wantErr(t, func() { interp.Bind1(prims.Add, nil, x, y) }, "add", "f64[2]", "f64[3]")
	if e.Prim != "add" {
		t.Errorf("Prim = %q", e.Prim)
	}
	wantErr(t, func() { interp.Bind1(prims.Add, nil, x, nil) }, "nil")
	wantErr(t, func() { interp.Bind1(prims.Exp, nil, f64([]float64{1}, 1), x) }, "takes 1 operands")
	wantErr(t, func() { x.Bools() }, "dtype f64")
	wantErr(t, func() { x.Item() }, "2 elements")
	// Writing through a broadcast view is refused.
	s := f64([]float64{1}, 1)
	wantErr(t, func() { interp.Bind(prims.CopyInPlace, nil, bcast(s, 3), f64([]float64{1, 2, 3}, 3)) }, "broadcast view")
	// A failing primitive inside a traced function names the level.
	wantErr(t, func() {
		interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
			return []*interp.Tensor{interp.Bind1(prims.Add, nil, a[0], y)}
		}, []*interp.Tensor{x})
	}, "add", "[in trace]")
}

func TestEvalViewsAlias(t *testing.T) {
	base := f64([]float64{0, 1, 2, 3, 4, 5}, 2, 3)
	tr := interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: []int{1, 0}}, base) // [3,2]
	row := interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{1, 0}, Limit: []int{2, 2}, Stride: []int{1, 1}}, tr)
	if interp.ViewInfo(row) == nil || interp.ViewInfo(row).Base != base {
		t.Fatal("view does not record its base")
	}
	interp.Bind(prims.CopyInPlace, nil, row, f64([]float64{10, 40}, 1, 2))
	if got := fmt.Sprint(base.Float64s()); got != "[0 10 2 3 40 5]" {
		t.Errorf("base after write through view of view: %v", got)
	}
	if got := fmt.Sprint(tr.Float64s()); got != "[0 3 10 40 2 5]" {
		t.Errorf("alias after write: %v", got)
	}
	// Reshape of a non-contiguous view copies (no strided view exists).
	flat := interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{6}}, tr)
	if got := fmt.Sprint(flat.Float64s()); got != "[0 3 10 40 2 5]" {
		t.Errorf("reshape of transpose: %v", got)
	}
}

func TestConcurrentDispatch(t *testing.T) {
	// Independent computations and traces in many goroutines: run with
	// -race to check that dispatch has no shared mutable state.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			x := f64([]float64{float64(g), 1, 2, 3, 4, 5}, 2, 3)
			b := f64([]float64{1, 2, 3}, 3)
			want := affine(x, x, b).Float64s()
			for i := 0; i < 50; i++ {
				gr := interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
					return []*interp.Tensor{affine(a[0], a[0], b)}
				}, []*interp.Tensor{x})
				got := gr.Eval(x)[0].Float64s()
				for k := range got {
					if got[k] != want[k] {
						errs <- fmt.Errorf("goroutine %d: %v != %v", g, got, want)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestErrorFormat(t *testing.T) {
	e := &interp.Error{Ops: []string{"peel.Add", "mylib.op"}, Prim: "add", Operands: []string{"f64[2]", "f64[3]"}, Transform: "vmap", Level: 2, Msg: "shapes differ"}
	want := "mylib.op > peel.Add: add: shapes differ (f64[2], f64[3]) [in vmap]"
	if e.Error() != want {
		t.Errorf("got %q\nwant %q", e.Error(), want)
	}
}
