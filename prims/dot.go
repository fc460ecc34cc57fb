package prims

import (
	"fmt"
	"sort"

	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// The dot family: dot_general.

// DotParams are the parameters of dot_general: the contracting and batch
// dimensions of each operand. The result's dimensions are the batch
// dimensions (in the order given), then the free dimensions of the left
// operand, then those of the right, each in increasing order.
type DotParams struct {
	LhsContract, RhsContract []int
	LhsBatch, RhsBatch       []int
}

func (p DotParams) String() string {
	return fmt.Sprintf("contract=(%v,%v) batch=(%v,%v)", p.LhsContract, p.RhsContract, p.LhsBatch, p.RhsBatch)
}

// DotShape checks dot_general's dimensions and returns the result shape.
// It panics with *interp.Error when they do not fit or the result is too
// large (see backend.CheckedSize).
func DotShape(p DotParams, a, b []int) []int {
	if len(p.LhsContract) != len(p.RhsContract) || len(p.LhsBatch) != len(p.RhsBatch) {
		interp.Panicf("contracting and batch dimension lists must pair up")
	}
	// Which dimensions the lists name: on the stack for the usual ranks
	// (this runs for every product, traced or eager).
	var ubuf [2][16]bool
	used := func(k, rank int, lists ...[]int) []bool {
		var u []bool
		if rank <= len(ubuf[k]) {
			u = ubuf[k][:rank]
		} else {
			u = make([]bool, rank)
		}
		for _, l := range lists {
			for _, d := range l {
				checkAxis(d, rank)
				if u[d] {
					interp.Panicf("dimension %d used twice", d)
				}
				u[d] = true
			}
		}
		return u
	}
	ua := used(0, len(a), p.LhsContract, p.LhsBatch)
	ub := used(1, len(b), p.RhsContract, p.RhsBatch)
	out := make([]int, 0, max(0, len(a)+len(b)-2*len(p.LhsContract)-len(p.LhsBatch)))
	for i := range p.LhsBatch {
		da, db := a[p.LhsBatch[i]], b[p.RhsBatch[i]]
		if da != db {
			interp.Panicf("batch dimensions %d and %d differ: %d vs %d", p.LhsBatch[i], p.RhsBatch[i], da, db)
		}
		out = append(out, da)
	}
	for i := range p.LhsContract {
		da, db := a[p.LhsContract[i]], b[p.RhsContract[i]]
		if da != db {
			interp.Panicf("contracting dimensions %d and %d differ: %d vs %d", p.LhsContract[i], p.RhsContract[i], da, db)
		}
	}
	for k, d := range a {
		if !ua[k] {
			out = append(out, d)
		}
	}
	for k, d := range b {
		if !ub[k] {
			out = append(out, d)
		}
	}
	checkShape(out)
	return out
}

// DotGeneral is a general tensor contraction (see DotParams). Operands
// have one numeric dtype.
var DotGeneral = graphio.Params[DotParams](interp.NewPrim("dot_general", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 2)
	if in[0].DType != in[1].DType {
		interp.Panicf("operands must have one dtype")
	}
	checkClass(numeric, in[0])
	return one(aval{Shape: DotShape(params.(DotParams), in[0].Shape, in[1].Shape), DType: in[0].DType})
}))

func init() {
	defJVP(DotGeneral, func(params any, x, t []*tensor, _ *tensor) *tensor {
		var a, b *tensor
		if t[0] != nil {
			a = interp.Bind1(DotGeneral, params, t[0], x[1])
		}
		if t[1] != nil {
			b = interp.Bind1(DotGeneral, params, x[0], t[1])
		}
		return addNil(a, b)
	})
	defTranspose(DotGeneral, linear2, dotTranspose)
}

// dotTranspose contracts the cotangent with the constant operand over the
// constant's free dimensions (batch dimensions stay batch), which leaves
// [batch, linear operand's free, constant's contracting] dimensions, and
// permutes them into the linear operand's order.
func dotTranspose(params any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	dp := params.(DotParams)
	i := oneLinear("dot_general", linear)
	x, y := args[i], args[1-i]
	xc, xb, yc, yb := dp.LhsContract, dp.LhsBatch, dp.RhsContract, dp.RhsBatch
	if i == 1 {
		xc, xb, yc, yb = yc, yb, xc, xb
	}
	nb := len(xb)
	xFree := freeDims(x.Rank(), xc, xb)
	yFree := freeDims(y.Rank(), yc, yb)
	// ct's dimensions: batch, lhs free, rhs free.
	yStart := nb
	if i == 0 {
		yStart += len(xFree)
	}
	ctContract := make([]int, len(yFree))
	for k := range yFree {
		ctContract[k] = yStart + k
	}
	ctBatch := make([]int, nb)
	for k := range ctBatch {
		ctBatch[k] = k
	}
	// ct·y has the dimensions batch, x free, y contracting (increasing,
	// which pair with x's contracting dimensions); y·ct has batch, y
	// contracting, x free. Of the two, the one laid out as x is (often
	// y·ct: the weight of h·W has its contracting dimension first) is
	// computed, so the cotangent is contiguous and not a transposed view,
	// which the sums of cotangents would copy (a tenth of an unrolled
	// RNN's gradient).
	ycSorted := append([]int{}, yc...)
	sort.Ints(ycSorted)
	perm, permSwap := make([]int, x.Rank()), make([]int, x.Rank())
	for k, d := range xb {
		perm[d], permSwap[d] = k, k
	}
	for k, d := range xFree {
		perm[d], permSwap[d] = nb+k, nb+len(xc)+k
	}
	for k, d := range xc {
		c := sort.SearchInts(ycSorted, yc[k])
		perm[d], permSwap[d] = nb+len(xFree)+c, nb+c
	}
	res := make([]*tensor, 2)
	if !isIdentityPerm(perm) && isIdentityPerm(permSwap) {
		p := DotParams{LhsContract: yFree, RhsContract: ctContract, LhsBatch: yb, RhsBatch: ctBatch}
		res[i] = interp.Bind1(DotGeneral, p, y, ct)
		return res
	}
	p := DotParams{LhsContract: ctContract, RhsContract: yFree, LhsBatch: ctBatch, RhsBatch: yb}
	z := interp.Bind1(DotGeneral, p, ct, y)
	res[i] = transpose(z, perm)
	return res
}

// freeDims returns the dimensions of a rank-r operand that are neither
// contracting nor batch, in increasing order.
func freeDims(r int, contract, batch []int) []int {
	used := make([]bool, r)
	for _, d := range contract {
		used[d] = true
	}
	for _, d := range batch {
		used[d] = true
	}
	free := make([]int, 0, r)
	for d := 0; d < r; d++ {
		if !used[d] {
			free = append(free, d)
		}
	}
	return free
}
