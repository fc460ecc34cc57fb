package peel

import (
	"strings"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// dotGeneral binds dot_general.
func dotGeneral(a, b *Tensor, lc, rc, lb, rb []int) *Tensor {
	return interp.Bind1(prims.DotGeneral, prims.DotParams{LhsContract: lc, RhsContract: rc, LhsBatch: lb, RhsBatch: rb}, a, b)
}

// contractOperands promotes a and b to one numeric dtype, panicking with
// *Error naming op when they are nil or bool.
func contractOperands(op string, a, b *Tensor) (*Tensor, *Tensor) {
	checkTensor(op, a)
	checkTensor(op, b)
	d := PromoteTypes(a.DType(), b.DType())
	if d == Bool {
		errorf(op, "operands %s and %s are bool; convert them to a numeric dtype with AsType", a.TypeString(), b.TypeString())
	}
	return AsType(a, d), AsType(b, d)
}

// matmul is MatMul reporting errors as op.
func matmul(op string, a, b *Tensor) *Tensor {
	checkTensor(op, a)
	checkTensor(op, b)
	ra, rb := a.Rank(), b.Rank()
	if ra == 0 || rb == 0 {
		errorf(op, "operands %s and %s: matrix product needs rank ≥ 1 (use Mul for scalars)", a.TypeString(), b.TypeString())
	}
	a, b = contractOperands(op, a, b)
	ka := a.Shape()[ra-1]
	kbAxis := max(rb-2, 0)
	if kb := b.Shape()[kbAxis]; ka != kb {
		errorf(op, "contracting dimensions differ: %s has %d columns, %s has %d rows", a.TypeString(), ka, b.TypeString(), kb)
	}
	switch {
	case rb == 1:
		// [..., m, k] · [k] → [..., m] (and [k] · [k] → []).
		return dotGeneral(a, b, []int{ra - 1}, []int{0}, nil, nil)
	case ra == 1:
		// [k] · [..., k, n] → [..., n].
		return dotGeneral(a, b, []int{0}, []int{kbAxis}, nil, nil)
	case rb == 2:
		// [..., m, k] · [k, n] → [..., m, n]: one matrix product, no batch.
		return dotGeneral(a, b, []int{ra - 1}, []int{0}, nil, nil)
	case ra == 2:
		// [m, k] · [B..., k, n] → [m, B..., n], then move m before n.
		y := dotGeneral(a, b, []int{1}, []int{kbAxis}, nil, nil)
		perm := make([]int, 0, rb)
		for i := 1; i < rb-1; i++ {
			perm = append(perm, i)
		}
		return transposeView(y, append(perm, 0, rb-1))
	}
	ba, bb := a.Shape()[:ra-2], b.Shape()[:rb-2]
	batch := broadcastShapes(op, ba, bb)
	nb := len(batch)
	a = broadcastTo(a, append(append([]int{}, batch...), a.Shape()[ra-2:]...))
	b = broadcastTo(b, append(append([]int{}, batch...), b.Shape()[rb-2:]...))
	dims := make([]int, nb)
	for i := range dims {
		dims[i] = i
	}
	return dotGeneral(a, b, []int{nb + 1}, []int{nb}, dims, dims)
}

// MatMul returns the matrix product of a and b with numpy's matmul
// semantics: 2-D operands multiply as matrices; a 1-D left operand is a row
// vector and a 1-D right operand a column vector, and the added dimension
// is removed from the result (1-D · 1-D is the inner product, rank 0);
// operands of rank > 2 are stacks of matrices in the last two dimensions
// whose batch dimensions broadcast. Dtypes are promoted. It is one
// dot_general primitive. MatMul panics with *Error when an operand is nil,
// rank 0 or bool, the contracting dimensions differ, or the batch
// dimensions do not broadcast.
func MatMul(a, b *Tensor) *Tensor {
	defer interp.Annotate("peel.MatMul")
	return matmul("peel.MatMul", a, b)
}

// Dot returns the inner product of two 1-D tensors (a rank-0 tensor); for
// higher ranks it is MatMul. It panics with *Error in the cases MatMul
// does.
func Dot(a, b *Tensor) *Tensor {
	defer interp.Annotate("peel.Dot")
	return matmul("peel.Dot", a, b)
}

// Outer returns the outer product of a and b, which are flattened first:
// out[i, j] = a[i]·b[j], of shape [a.Size(), b.Size()]. Dtypes are
// promoted. Outer panics with *Error when an operand is nil or both are
// bool.
func Outer(a, b *Tensor) *Tensor {
	defer interp.Annotate("peel.Outer")
	a, b = contractOperands("peel.Outer", a, b)
	a = reshapeView(a, []int{a.Size()})
	b = reshapeView(b, []int{b.Size()})
	return dotGeneral(a, b, nil, nil, nil, nil)
}

// einsumTerm is an operand of Einsum and the letter naming each of its
// axes.
type einsumTerm struct {
	t       *Tensor
	letters []byte
}

// Einsum evaluates an Einstein summation in explicit form, such as
// "bij,bjk->bik", "i,i->", "ij,j->i" or "bhqd,bhkd->bhqk": each operand's
// axes are named by letters (a–z, A–Z), the output lists the letters it
// keeps, and every other letter is summed over. Dtypes are promoted. The
// operands are contracted pairwise from left to right with dot_general
// (letters shared by both operands that are still needed later are batch
// dimensions), after summing each letter that appears in only one operand
// and not in the output; the result is then transposed to the output's
// order. Repeated letters within one operand (traces and diagonals, "ii->i")
// and ellipses ("...") are not supported. Einsum panics with *Error when
// the spec is malformed or unsupported, the number of operands or an
// operand's rank does not match it, an output letter appears in no operand
// or twice, a letter has different sizes in different operands, an
// operand is nil, or a summation involves bool operands.
func Einsum(spec string, operands ...*Tensor) *Tensor {
	defer interp.Annotate("peel.Einsum")
	const op = "peel.Einsum"
	s := strings.ReplaceAll(spec, " ", "")
	lhs, out, ok := strings.Cut(s, "->")
	if !ok {
		errorf(op, "spec %q has no \"->\": only the explicit form is supported", spec)
	}
	if strings.Contains(s, ".") {
		errorf(op, "spec %q: ellipsis (...) is not supported", spec)
	}
	ins := strings.Split(lhs, ",")
	if len(ins) != len(operands) {
		errorf(op, "spec %q names %d operands, got %d", spec, len(ins), len(operands))
	}
	isLetter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	size := map[byte]int{}
	count := map[byte]int{} // number of operands naming each letter
	terms := make([]einsumTerm, len(operands))
	vals := make([]any, len(operands))
	for i, in := range ins {
		t := operands[i]
		if t == nil {
			errorf(op, "operand %d is nil", i)
		}
		vals[i] = t
		if len(in) != t.Rank() {
			errorf(op, "spec %q: operand %d is %s, but its subscripts %q name %d axes", spec, i, t.TypeString(), in, len(in))
		}
		for j := 0; j < len(in); j++ {
			c := in[j]
			if !isLetter(c) {
				errorf(op, "spec %q: %q is not a letter", spec, c)
			}
			if strings.IndexByte(in[:j], c) >= 0 {
				errorf(op, "spec %q: letter %q repeats in operand %d; traces and diagonals are not supported", spec, c, i)
			}
			d := t.Shape()[j]
			if n, seen := size[c]; seen && n != d {
				errorf(op, "spec %q: letter %q has size %d in one operand and %d in operand %d (%s)", spec, c, n, d, i, t.TypeString())
			}
			size[c] = d
			count[c]++
		}
		terms[i] = einsumTerm{t: t, letters: []byte(in)}
	}
	for j := 0; j < len(out); j++ {
		c := out[j]
		if !isLetter(c) {
			errorf(op, "spec %q: %q is not a letter", spec, c)
		}
		if _, seen := size[c]; !seen {
			errorf(op, "spec %q: output letter %q appears in no operand", spec, c)
		}
		if strings.IndexByte(out[:j], c) >= 0 {
			errorf(op, "spec %q: output letter %q repeats", spec, c)
		}
	}
	d := resultDType(op, vals)
	needsNumeric := func() {
		if d == Bool {
			errorf(op, "spec %q sums over bool operands; convert them to a numeric dtype with AsType", spec)
		}
	}
	inOut := func(c byte) bool { return strings.IndexByte(out, c) >= 0 }
	// Sum the letters that appear in one operand only and not in the output.
	for i := range terms {
		tm := &terms[i]
		tm.t = AsType(tm.t, d)
		var axes []int
		var keep []byte
		for j, c := range tm.letters {
			if count[c] == 1 && !inOut(c) {
				axes = append(axes, j)
			} else {
				keep = append(keep, c)
			}
		}
		if len(axes) > 0 {
			needsNumeric()
			tm.t = interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: axes}, tm.t)
			tm.letters = keep
		}
	}
	// Contract left to right.
	cur := terms[0]
	for i := 1; i < len(terms); i++ {
		next := terms[i]
		needed := func(c byte) bool {
			if inOut(c) {
				return true
			}
			for _, tm := range terms[i+1:] {
				if strings.IndexByte(string(tm.letters), c) >= 0 {
					return true
				}
			}
			return false
		}
		var lc, rc, lb, rb []int
		var batch, lfree, rfree []byte
		for j, c := range cur.letters {
			k := strings.IndexByte(string(next.letters), c)
			switch {
			case k < 0:
				lfree = append(lfree, c)
			case needed(c):
				lb, rb = append(lb, j), append(rb, k)
				batch = append(batch, c)
			default:
				lc, rc = append(lc, j), append(rc, k)
			}
		}
		for _, c := range next.letters {
			if strings.IndexByte(string(cur.letters), c) < 0 {
				rfree = append(rfree, c)
			}
		}
		needsNumeric()
		cur = einsumTerm{
			t:       dotGeneral(cur.t, next.t, lc, rc, lb, rb),
			letters: append(append(batch, lfree...), rfree...),
		}
	}
	perm := make([]int, len(out))
	for j := 0; j < len(out); j++ {
		perm[j] = strings.IndexByte(string(cur.letters), out[j])
	}
	return transposeView(cur.t, perm)
}
