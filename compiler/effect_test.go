package compiler_test

import (
	"sync"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/interp"
)

// kept is what keepPrim kept, for readPrim.
var kept struct {
	sync.Mutex
	t *interp.Tensor
}

// keepPrim is an effect that keeps its operand after its instruction (as
// a started all-reduce does) and returns a token; readPrim returns the
// kept operand, read later in the program.
var keepPrim = interp.NewPrim("test_keep_operand", interp.Pure, func(_ any, in []interp.Aval) []interp.Aval {
	return []interp.Aval{{DType: peel.Int64}}
})

var readPrim = interp.NewPrim("test_read_kept", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	return []interp.Aval{params.(interp.Aval)}
})

func init() {
	keepPrim.Effect = true
	keepPrim.EvalImpl = func(_ any, args []*interp.Tensor) []*interp.Tensor {
		kept.Lock()
		kept.t = args[0]
		kept.Unlock()
		return []*interp.Tensor{peel.Scalar(int64(0))}
	}
	readPrim.Effect = true
	readPrim.EvalImpl = func(_ any, args []*interp.Tensor) []*interp.Tensor {
		kept.Lock()
		defer kept.Unlock()
		return []*interp.Tensor{kept.t}
	}
}

// TestEffectOperandOutlivesInstruction: an effect's operand is its own
// until it lets go, though the program's arena reuses the buffer it came
// from as soon as its last reader ran. Before effects got copies, the
// kept a = 2x read back b = cumsum(x), which took a's buffer.
func TestEffectOperandOutlivesInstruction(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4})
	f := func(a []*peel.Tensor) []*peel.Tensor {
		x := a[0]
		tok := interp.Bind1(keepPrim, nil, x.Mul(2.0))
		b := peel.Cumsum(x, 0)
		r := interp.Bind1(readPrim, interp.AvalOf(x), tok)
		return []*peel.Tensor{r.Add(b.Mul(0.0))}
	}
	g := interp.Trace(f, []*peel.Tensor{x})
	og, _ := compiler.Optimize(g, compiler.DefaultPasses(), false)
	p := compiler.Build(og)
	for range 3 {
		got := p.Run([]*interp.Tensor{x}, nil)[0].Float64s()
		for i, v := range got {
			if want := 2 * float64(i+1); v != want {
				t.Fatalf("element %d of the kept operand is %v, want %v (the arena reused its buffer): %v", i, v, want, got)
			}
		}
	}
}
