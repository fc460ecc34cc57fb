package optest

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/peel-ml/peel"
)

// Helpers of the Vmap sweeps: lane variants of sample operands, batch
// dimension choices and the loop oracle a vectorized result is checked
// against.

// NoBatch marks, in an axis combination, an operand that is not mapped.
const NoBatch = -1

// LaneVariant returns lane i of a batch built from x: a deterministic
// perturbation that is x itself for lane 0. Floats become
// x·(1+0.1i) + 0.01i (in x's dtype), integers are rotated by i positions
// in row-major order (a permutation, so integer index operands stay valid
// indices and nonzero divisors stay nonzero), and bools are negated in
// odd lanes.
func LaneVariant(x *peel.Tensor, i int) *peel.Tensor {
	if i == 0 {
		return x
	}
	h := ToHost(x)
	out := Host{Shape: append([]int{}, h.Shape...), DType: h.DType, Data: make([]float64, len(h.Data))}
	n := len(h.Data)
	for k, v := range h.Data {
		switch h.DType {
		case peel.Int64, peel.Int32, peel.Uint8:
			out.Data[k] = h.Data[(k+i)%n]
		case peel.Bool:
			if i%2 == 1 {
				v = 1 - v
			}
			out.Data[k] = v
		default:
			out.Data[k] = Round(h.DType, v*(1+0.1*float64(i))+0.01*float64(i))
		}
	}
	return out.Tensor()
}

// BatchDimChoices returns the batch dimensions an operand of logical rank
// r is mapped along in a sweep: NoBatch, 0, the last (r) and, for r ≥ 2,
// a middle one.
func BatchDimChoices(r int) []int {
	c := []int{NoBatch, 0}
	if r > 0 {
		c = append(c, r)
	}
	if r >= 2 {
		c = append(c, (r+1)/2)
	}
	return c
}

// AxisCombos returns at most limit choices of one batch dimension per
// operand (from BatchDimChoices of ranks), never all NoBatch, drawn
// deterministically from seed. The first is all 0; with two or more
// operands the second maps the first operand NoBatch and the others 0,
// and the third (with three or more) maps only the first operand.
func AxisCombos(ranks []int, limit int, seed string) [][]int {
	choices := make([][]int, len(ranks))
	total := 1
	for i, r := range ranks {
		choices[i] = BatchDimChoices(r)
		total *= len(choices[i])
	}
	var all [][]int
	for f := 0; f < total; f++ {
		c := make([]int, len(ranks))
		g, any := f, false
		for i := range ranks {
			c[i] = choices[i][g%len(choices[i])]
			g /= len(choices[i])
			any = any || c[i] != NoBatch
		}
		if any {
			all = append(all, c)
		}
	}
	key := func(c []int) string { return fmt.Sprint(c) }
	var out [][]int
	seen := map[string]bool{}
	add := func(c []int) {
		if len(out) < limit && !seen[key(c)] {
			seen[key(c)] = true
			out = append(out, c)
		}
	}
	zeros := make([]int, len(ranks))
	add(zeros)
	if len(ranks) >= 2 {
		c := make([]int, len(ranks))
		c[0] = NoBatch
		add(c)
	}
	if len(ranks) >= 3 {
		c := make([]int, len(ranks))
		for i := 1; i < len(c); i++ {
			c[i] = NoBatch
		}
		add(c)
	}
	h := fnv.New64a()
	h.Write([]byte(seed))
	r := rand.New(rand.NewPCG(h.Sum64(), 7))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for _, c := range all {
		add(c)
	}
	return out
}

// Batch returns the lanes LaneVariant(x, 0..n-1) stacked along axis, and
// the lanes; for axis NoBatch it returns x and n copies of x.
func Batch(x *peel.Tensor, n, axis int) (*peel.Tensor, []*peel.Tensor) {
	lanes := make([]*peel.Tensor, n)
	for i := range lanes {
		if axis == NoBatch {
			lanes[i] = x
		} else {
			lanes[i] = LaneVariant(x, i)
		}
	}
	if axis == NoBatch {
		return x, lanes
	}
	return peel.Stack(lanes, axis), lanes
}

// LoopOracle applies f to each lane's operands (lanes[i] are lane i's
// operands) and stacks the results along out (negative counts from the
// end of the stacked result).
func LoopOracle(f func([]*peel.Tensor) *peel.Tensor, lanes [][]*peel.Tensor, out int) *peel.Tensor {
	res := make([]*peel.Tensor, len(lanes))
	for i, l := range lanes {
		res[i] = f(l)
	}
	return peel.Stack(res, out)
}

// VmapTol is the tolerance Vmap results are compared with against the
// loop oracle (see Compare): exact for integers and bools and for the
// data-movement ops of ExactOps, 1e-12 relative for f64, 1e-5 for f32.
func VmapTol(op string, d peel.DType) float64 {
	if exactOps()[op] {
		return -1
	}
	switch d {
	case peel.Float64:
		return 1e-12
	case peel.Float32:
		return 1e-5
	case peel.Float16, peel.BFloat16:
		return DefaultTol(d)
	}
	return -1
}

// exactOps are the registry's shape ops that only move data, whose
// vectorized results must equal the loop's bit for bit.
var exactOps = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, op := range shapeOps() {
		if strings.HasPrefix(op.Name, "peel.IndexAdd") || strings.HasPrefix(op.Name, "peel.AddInPlace") {
			continue // arithmetic
		}
		m[op.Name] = true
	}
	return m
})

// Describe prints operands as dtype[shape] for failure messages.
func Describe(args []*peel.Tensor) string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = a.DType().String() + fmt.Sprint(a.Shape())
	}
	return strings.Join(s, ", ")
}
