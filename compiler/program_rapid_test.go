package compiler_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/interp"
)

// rgStep is one step of a random program: an opcode and operand picks.
type rgStep struct{ op, a, b, c int }

// rgProgram is a random program over two inputs of shape [r, c].
type rgProgram struct {
	r, c  int
	dt    peel.DType
	steps []rgStep
	outs  []int
}

func drawExecProgram(t *rapid.T) rgProgram {
	dims := []int{0, 1, 2, 3, 5, 8, 130, 160}
	p := rgProgram{
		r:  rapid.SampledFrom(dims).Draw(t, "r"),
		c:  rapid.SampledFrom(dims).Draw(t, "c"),
		dt: rapid.SampledFrom([]peel.DType{peel.Float64, peel.Float32}).Draw(t, "dtype"),
	}
	// Square inputs often: there a value broadcast along either axis has
	// the same shape, which the fuser must still tell apart.
	if rapid.Bool().Draw(t, "square") {
		p.c = p.r
	}
	n := rapid.IntRange(1, 16).Draw(t, "steps")
	for range n {
		p.steps = append(p.steps, rgStep{
			op: rapid.IntRange(0, 22).Draw(t, "op"),
			a:  rapid.IntRange(0, 1<<20).Draw(t, "a"),
			b:  rapid.IntRange(0, 1<<20).Draw(t, "b"),
			c:  rapid.IntRange(0, 1<<20).Draw(t, "c"),
		})
	}
	p.outs = rapid.SliceOfN(rapid.IntRange(0, 1<<20), 1, 4).Draw(t, "outs")
	return p
}

// build runs the program on a and b (tracers or concrete tensors): every
// step appends one value to the pool; the results are the last value
// and the values outs picks (inputs and views among them).
func (p rgProgram) build(c0 *peel.Tensor) func(in []*peel.Tensor) []*peel.Tensor {
	return func(in []*peel.Tensor) []*peel.Tensor {
		pool := []*peel.Tensor{in[0], in[1]}
		pick := func(k int) *peel.Tensor { return pool[k%len(pool)] }
		// partner returns a value of x's shape (x itself when none).
		partner := func(x *peel.Tensor, k int) *peel.Tensor {
			var same []*peel.Tensor
			for _, v := range pool {
				if interp.ShapeEqual(v.Shape(), x.Shape()) {
					same = append(same, v)
				}
			}
			return same[k%len(same)]
		}
		for _, s := range p.steps {
			x := pick(s.a)
			var y *peel.Tensor
			switch s.op {
			case 0:
				y = peel.Sin(x)
			case 1:
				y = peel.Tanh(x)
			case 2:
				y = peel.Exp(peel.Neg(peel.Abs(x)))
			case 3:
				y = peel.Add(x, partner(x, s.b))
			case 4:
				y = peel.Mul(x, partner(x, s.b))
			case 5:
				y = peel.Sub(x, 0.75)
			case 6:
				y = peel.Mul(peel.Add(peel.Mul(x, 2.0), 1.0), x)
			case 7:
				if x.Rank() == 2 {
					y = peel.Transpose(x)
				} else {
					y = peel.Square(x)
				}
			case 8:
				if x.Rank() >= 1 && x.Shape()[x.Rank()-1] > 1 {
					y = peel.Slice(x, x.Rank()-1, 1, x.Shape()[x.Rank()-1], 2)
				} else {
					y = peel.Log1p(peel.Abs(x))
				}
			case 9:
				if x.Rank() == 2 {
					y = peel.Sum(x, s.b%2)
				} else {
					y = peel.Sum(x)
				}
			case 10:
				if x.Rank() == 1 {
					// A row broadcast against a [k, n] value.
					y = peel.Mul(peel.BroadcastTo(x, 3, x.Shape()[0]), 1.5)
				} else {
					y = peel.Reshape(x, x.Size())
				}
			case 11:
				if x.Rank() == 2 {
					y = peel.MatMul(x, peel.Transpose(partner(x, s.b)))
				} else {
					y = peel.Maximum(x, partner(x, s.b))
				}
			case 12:
				z := partner(x, s.b)
				y = peel.Where(peel.Greater(x, z), x, peel.Neg(z))
			case 13:
				y = peel.AsType(peel.Sigmoid(peel.AsType(x, peel.Float64)), x.DType())
			case 14:
				y = peel.Add(x, peel.Sum(x))
			case 15:
				y = peel.Mul(x, peel.BroadcastTo(c0, x.Shape()...))
			case 16:
				if x.Rank() == 2 {
					y = peel.Flip(x, 0)
				} else {
					y = peel.Div(x, 3.0)
				}
			case 17:
				y = peel.Clone(x)
			case 18:
				// Row reductions feeding later equations of the rows.
				if x.Rank() >= 1 && x.Shape()[x.Rank()-1] > 0 {
					y = peel.Softmax(x, -1)
				} else {
					y = peel.Exp(x)
				}
			case 19:
				if x.Rank() >= 1 {
					d := peel.Sub(x, peel.Keep(peel.Mean, x, -1))
					y = peel.Mul(d, peel.Rsqrt(peel.Add(peel.Keep(peel.Mean, peel.Mul(d, d), -1), 1e-5)))
				} else {
					y = peel.Cos(x)
				}
			case 20:
				// A vector of the last axis broadcast along the rows.
				if x.Rank() == 2 && x.Shape()[0] > 0 {
					y = peel.Add(peel.Mul(x, peel.Sum(partner(x, s.b), 0)), peel.Max(partner(x, s.c), 0))
				} else {
					y = peel.Sin(x)
				}
			case 21:
				// A per-row value broadcast along the last axis.
				if x.Rank() >= 1 && x.Shape()[x.Rank()-1] > 0 {
					m := peel.Keep(peel.Max, x, -1)
					y = peel.Div(peel.Sub(x, m), peel.Add(peel.Keep(peel.Sum, peel.Abs(partner(x, s.b)), -1), 1.0))
				} else {
					y = peel.Abs(x)
				}
			case 22:
				// A reduction re-broadcast along either axis: along the
				// one it reduced it is a per-row value, along the other
				// (square values) a vector.
				y = peel.Exp(peel.Neg(peel.Abs(x)))
				if x.Rank() == 2 {
					r, c := x.Shape()[0], x.Shape()[1]
					axis := s.b % 2
					n := r
					if axis == 0 {
						n = c
					}
					vs := []int{n, 1}
					if s.c%2 == 1 {
						vs = []int{1, n}
					}
					if (vs[0] == 1 || vs[0] == r) && (vs[1] == 1 || vs[1] == c) {
						y = peel.Mul(y, peel.Reshape(peel.Sum(y, axis), vs...))
					}
				}
			}
			pool = append(pool, y)
		}
		res := []*peel.Tensor{pool[len(pool)-1]}
		for _, k := range p.outs {
			res = append(res, pick(k))
		}
		return res
	}
}

func rgInputs(p rgProgram, seed float64) []*peel.Tensor {
	n := p.r * p.c
	return []*peel.Tensor{
		peel.AsType(peel.FromFloat64s(seqValues(n, seed), p.r, p.c), p.dt),
		peel.AsType(peel.FromFloat64s(seqValues(n, -seed/2), p.r, p.c), p.dt),
	}
}

// TestRandomPrograms: random compositions of elementwise, view,
// reduction and matrix ops run by a Program equal Graph.Eval bit for bit
// (fusion does not reorder arithmetic), with and without donation, and a
// run does not write its inputs.
func TestRandomPrograms(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawExecProgram(t)
		c0 := peel.AsType(peel.Scalar(0.25), p.dt)
		args := rgInputs(p, 1)
		g := interp.Trace(p.build(c0), args)
		prog := checkProgram(t, g, args)
		want := g.Eval(args...)
		for i, a := range rgInputs(p, 1) {
			if d := sameBits(args[i], a); d != "" {
				t.Fatalf("input %d written: %s", i, d)
			}
		}
		// Strided (transposed) arguments.
		if p.r == p.c {
			tr := []*peel.Tensor{peel.Transpose(args[0]), peel.Transpose(args[1])}
			w := g.Eval(tr...)
			got := prog.Run(tr, nil)
			for i := range w {
				if d := sameBits(got[i], w[i]); d != "" {
					t.Fatalf("strided args, output %d: %s\n%v", i, d, prog)
				}
			}
		}
		// Broadcast scalars as arguments (a cotangent of a sum): run by
		// variants that read them in place, donated or not.
		for mask := 1; mask < 4; mask++ {
			sp := rgInputs(p, 1)
			for i := range sp {
				if mask&(1<<i) != 0 {
					sp[i] = peel.BroadcastTo(peel.AsType(peel.Scalar(0.75-float64(i)), p.dt), p.r, p.c)
				}
			}
			w := g.Eval(sp...)
			// Copies: an output of Graph.Eval may be a view of an
			// argument (a reshape), whose memory the donated run below
			// may reuse, as donating gives it up.
			for i := range w {
				w[i] = peel.Clone(w[i])
			}
			for _, donate := range [][]bool{nil, {true, true}} {
				got := prog.Run(sp, donate)
				for i := range w {
					if d := sameBits(got[i], w[i]); d != "" {
						t.Fatalf("broadcast args %b (donate %v), output %d: %s\n%v", mask, donate, i, d, prog)
					}
				}
			}
		}
		// Donated copies of the arguments.
		got := prog.Run(rgInputs(p, 1), []bool{true, true})
		for i := range want {
			if d := sameBits(got[i], want[i]); d != "" {
				t.Fatalf("donated, output %d: %s\n%v", i, d, prog)
			}
		}
		// A second run reuses the pooled arena.
		got = prog.Run(args, nil)
		for i := range want {
			if d := sameBits(got[i], want[i]); d != "" {
				t.Fatalf("second run, output %d: %s\n%v", i, d, prog)
			}
		}
	})
}

var _ = compiler.Build
