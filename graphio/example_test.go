package graphio_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// A traced graph is written as bytes and read back: the decoded graph
// is the same program (reduce_sum's parameters, prims.ReduceParams, are
// written by the codec its definition declares), and it runs.
func Example() {
	x := peel.FromFloat64s([]float64{1, 2, 3})
	g := interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		y := interp.Bind1(prims.Mul, nil, a[0], a[0])
		return []*interp.Tensor{interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: []int{0}}, y)}
	}, []*interp.Tensor{x})
	b, err := graphio.Encode(g, false)
	if err != nil {
		panic(err)
	}
	h, err := graphio.Decode(b, cpu.New())
	if err != nil {
		panic(err)
	}
	fmt.Println(len(b), "bytes")
	fmt.Println(h)
	fmt.Println(h.Eval(x)[0])
	// Output:
	// 40 bytes
	// { lambda ; a:f64[3] .
	//   let b:f64[3] = mul a a
	//       c:f64[] = reduce_sum[axes=[0]] b
	//   in (c) }
	// 14
}

// scaleParams are the parameters of the example's primitive.
type scaleParams struct{ By float64 }

func same(_ any, in []interp.Aval) []interp.Aval { return in }

// scale declares its parameter type where it is defined, which gives it
// its codec (StructCodec[scaleParams]); raw does not.
var (
	scale = graphio.Params[scaleParams](interp.NewPrim("example_scale", interp.Pure, same))
	raw   = interp.NewPrim("example_raw", interp.Pure, same)
)

// A primitive with parameters declares their type with Params; a
// primitive with parameters and no codec cannot be written.
func ExampleParams() {
	fmt.Println(scale.Codec.ParamType())
	x := &interp.Var{ID: 0, Aval: interp.Aval{Shape: []int{2}, DType: interp.Float64}}
	y := &interp.Var{ID: 1, Aval: x.Aval}
	g := &interp.Graph{In: []*interp.Var{x}, Eqns: []*interp.Eqn{{Prim: scale, Params: scaleParams{By: 2}, In: []*interp.Var{x}, Out: []*interp.Var{y}}}, Out: []*interp.Var{y}}
	b, err := graphio.Encode(g, false)
	if err != nil {
		panic(err)
	}
	h, err := graphio.Decode(b, cpu.New())
	if err != nil {
		panic(err)
	}
	fmt.Println(h)
	g.Eqns[0].Prim = raw
	_, err = graphio.Encode(g, false)
	fmt.Println(err)
	// Output:
	// graphio_test.scaleParams
	// { lambda ; a:f64[2] .
	//   let b:f64[2] = example_scale[{By:2}] a
	//   in (b) }
	// equation 0: example_raw has parameters ({By:2}) that cannot be written into a file
}
