package peel

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Products of tensors, one dot_general primitive each: MatMul, Dot, Outer
// and Einsum, and the pairwise distances Cdist built on them.

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

// Linear returns x·w + b, the affine map of a dense layer: x [..., k]
// times w [k, n], plus b [n] broadcast along x's leading axes, a result
// [..., n]; with b nil it is MatMul(x, w). Its values, dtype and
// derivatives are those of Add(MatMul(x, w), b). Where the product is
// floating and b converts to its dtype unchanged, it is one primitive
// (prims.Linear), which the CPU backend evaluates as the product and the
// addition in one buffer (the addition reads the product where it was
// just written, and no second buffer is filled); otherwise it is that
// decomposition. Linear panics with *Error when x or w is nil or bool, x
// is rank 0, w is not 2-D, x's last dimension is not w's first, or b is
// not 1-D of w's second dimension.
func Linear(x, w, b *Tensor) *Tensor {
	const op = "peel.Linear"
	defer interp.Annotate(op)
	checkTensor(op, x)
	checkTensor(op, w)
	if w.Rank() != 2 {
		errorf(op, "weight %s is not 2-D [k, n]", w.TypeString())
	}
	if x.Rank() == 0 || x.Shape()[x.Rank()-1] != w.Shape()[0] {
		errorf(op, "input %s does not end in the weight's %d rows (weight %s)", x.TypeString(), w.Shape()[0], w.TypeString())
	}
	if b == nil {
		return matmul(op, x, w)
	}
	checkTensor(op, b)
	if b.Rank() != 1 || b.Shape()[0] != w.Shape()[1] {
		errorf(op, "bias %s is not [%d] (weight %s)", b.TypeString(), w.Shape()[1], w.TypeString())
	}
	x, w = contractOperands(op, x, w)
	d := x.DType()
	if !d.IsFloat() || PromoteTypes(d, b.DType()) != d {
		return arith(op, prims.Add, matmul(op, x, w), b)
	}
	return interp.Bind1(prims.Linear, nil, x, w, AsType(b, d))
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

// einsumEllipsis is the internal letter of the k-th ellipsis dimension
// (counted over the broadcast ellipsis shape): a byte that no spec letter
// can be.
func einsumEllipsis(k int) byte { return byte(0x80 + k) }

// einsumIsLetter reports whether c may name an axis in an Einsum spec.
func einsumIsLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// einsumSubscripts splits the subscripts s of one operand (or of the
// output; what names it) into the letters before and after its ellipsis;
// ell reports whether it has one.
func einsumSubscripts(op, spec, what, s string) (pre, post []byte, ell bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c == '.' {
			if !strings.HasPrefix(s[i:], "...") {
				errorf(op, "spec %q: %s has a '.' that is not part of an ellipsis (...)", spec, what)
			}
			if ell {
				errorf(op, "spec %q: the ellipsis (...) appears twice in %s", spec, what)
			}
			ell = true
			i += 3
			continue
		}
		if !einsumIsLetter(c) {
			errorf(op, "spec %q: %q is not a letter", spec, c)
		}
		if ell {
			post = append(post, c)
		} else {
			pre = append(pre, c)
		}
		i++
	}
	return pre, post, ell
}

// Einsum evaluates an Einstein summation with numpy.einsum's semantics,
// such as "bij,bjk->bik", "i,i->", "ij,j->i" or "bhqd,bhkd->bhqk": each
// operand's axes are named by letters (a–z, A–Z), the output lists the
// letters it keeps, and every other letter is summed over. Spaces are
// ignored and dtypes are promoted.
//
// A letter repeated within one operand takes that operand's diagonal over
// those axes (their sizes must agree): "ii->" is the trace, "ii->i" the
// diagonal, "bii->bi" a batch of diagonals, "NMKK->NM" a trace over the
// last two axes. An ellipsis ("...", at most once per operand) stands for
// the axes not named by letters; the ellipses of the operands broadcast
// against each other by numpy's rules (aligned on the right, size-1
// dimensions stretch), as in "...ij,...jk->...ik" or "...i,...i->...".
// Without "->" the spec is in implicit form, as in numpy: the output is
// the broadcast ellipsis dimensions followed by the letters that appear
// exactly once in the spec, in ASCII order (upper case first), so "ij,jk"
// is "ij,jk->ik", "ii" is the trace and "ji" is "ji->ij", a transpose. In
// explicit form the output must have an ellipsis when the operands'
// ellipses cover any dimension, as numpy requires.
//
// Diagonals are strided slices of reshaped views and size-1 ellipsis
// dimensions that broadcast are dropped from their operand; the operands
// are then contracted pairwise from left to right with dot_general
// (letters shared by both operands that are still needed later are batch
// dimensions), after summing each letter that appears in only one operand
// and not in the output, and the result is transposed to the output's
// order. Everything is built from existing primitives, so Einsum works
// under every transform.
//
// Einsum panics with *Error when the spec is malformed (a character other
// than a letter, a '.' outside an ellipsis, an ellipsis twice in one
// operand or in the output), the number of operands or an operand's rank
// does not match it, a repeated letter has different sizes within one
// operand, a letter has different sizes in different operands, the
// ellipsis dimensions do not broadcast, an explicit output lacks an
// ellipsis the operands need or has a letter that appears in no operand
// or twice, an operand is nil, or a summation involves bool operands.
func Einsum(spec string, operands ...*Tensor) *Tensor {
	defer interp.Annotate("peel.Einsum")
	const op = "peel.Einsum"
	s := strings.ReplaceAll(spec, " ", "")
	lhs, outSpec, explicit := strings.Cut(s, "->")
	ins := strings.Split(lhs, ",")
	if len(ins) != len(operands) {
		errorf(op, "spec %q names %d operands, got %d", spec, len(ins), len(operands))
	}
	type subscripts struct {
		pre, post []byte
		nell      int // the number of dimensions the ellipsis covers
	}
	subs := make([]subscripts, len(ins))
	vals := make([]any, len(operands))
	total := map[byte]int{} // occurrences of each letter in the inputs
	maxEll := 0
	for i, in := range ins {
		t := operands[i]
		if t == nil {
			errorf(op, "operand %d is nil", i)
		}
		vals[i] = t
		pre, post, ell := einsumSubscripts(op, spec, fmt.Sprintf("operand %d", i), in)
		n := len(pre) + len(post)
		switch {
		case !ell && n != t.Rank():
			errorf(op, "spec %q: operand %d is %s, but its subscripts %q name %d axes", spec, i, t.TypeString(), in, n)
		case ell && n > t.Rank():
			errorf(op, "spec %q: operand %d is %s, but its subscripts %q name %d axes besides the ellipsis", spec, i, t.TypeString(), in, n)
		}
		subs[i] = subscripts{pre: pre, post: post, nell: t.Rank() - n}
		maxEll = max(maxEll, t.Rank()-n)
		for _, c := range pre {
			total[c]++
		}
		for _, c := range post {
			total[c]++
		}
	}
	if maxEll > 0x7f {
		errorf(op, "spec %q: the ellipsis covers %d dimensions, more than %d", spec, maxEll, 0x7f)
	}
	// Broadcast the ellipsis dimensions, aligned on the right.
	eshape := make([]int, maxEll)
	for k := range eshape {
		eshape[k] = 1
	}
	for i, sb := range subs {
		sh := operands[i].Shape()
		for k := 0; k < sb.nell; k++ {
			d, e := sh[len(sb.pre)+k], maxEll-sb.nell+k
			if d == 1 {
				continue
			}
			if eshape[e] != 1 && eshape[e] != d {
				errorf(op, "spec %q: the ellipsis dimensions of operand %d (%s) do not broadcast: dimension %d of the broadcast ellipsis has size %d in another operand, %d here", spec, i, operands[i].TypeString(), e, eshape[e], d)
			}
			eshape[e] = d
		}
	}
	// The output letters.
	var out []byte
	if explicit {
		pre, post, ell := einsumSubscripts(op, spec, "the output", outSpec)
		if !ell && maxEll > 0 {
			errorf(op, "spec %q: the operands' ellipses cover %d dimensions, but the output has no ellipsis (...) to keep them", spec, maxEll)
		}
		named := append(append([]byte(nil), pre...), post...)
		for j, c := range named {
			if total[c] == 0 {
				errorf(op, "spec %q: output letter %q appears in no operand", spec, c)
			}
			if slices.Contains(named[:j], c) {
				errorf(op, "spec %q: output letter %q repeats", spec, c)
			}
		}
		out = append(out, pre...)
		if ell {
			for k := range maxEll {
				out = append(out, einsumEllipsis(k))
			}
		}
		out = append(out, post...)
	} else {
		for k := range maxEll {
			out = append(out, einsumEllipsis(k))
		}
		for c := 0; c < 0x80; c++ {
			if total[byte(c)] == 1 {
				out = append(out, byte(c))
			}
		}
	}
	outStr := string(out)
	inOut := func(c byte) bool { return strings.IndexByte(outStr, c) >= 0 }
	// Each operand's letters: drop the size-1 ellipsis dimensions that
	// broadcast and take the diagonals of repeated letters.
	size := map[byte]int{}
	count := map[byte]int{} // number of operands naming each letter
	terms := make([]einsumTerm, len(operands))
	for i, sb := range subs {
		t := operands[i]
		letters := append([]byte(nil), sb.pre...)
		for k := 0; k < sb.nell; k++ {
			letters = append(letters, einsumEllipsis(maxEll-sb.nell+k))
		}
		letters = append(letters, sb.post...)
		sh := t.Shape()
		var keepShape []int
		var keepLetters []byte
		for j, c := range letters {
			if c >= 0x80 && sh[j] == 1 && eshape[c-0x80] != 1 {
				continue
			}
			keepShape, keepLetters = append(keepShape, sh[j]), append(keepLetters, c)
		}
		if len(keepLetters) < len(letters) {
			t, letters = Reshape(t, keepShape...), keepLetters
		}
		for {
			j, k := -1, -1
			for a := range letters {
				if b := slices.Index(letters[a+1:], letters[a]); b >= 0 {
					j, k = a, a+1+b
					break
				}
			}
			if j < 0 {
				break
			}
			c, sh := letters[j], t.Shape()
			n := sh[j]
			if sh[k] != n {
				errorf(op, "spec %q: letter %q repeats in operand %d (%s) with sizes %d and %d; a diagonal needs equal sizes", spec, c, i, operands[i].TypeString(), n, sh[k])
			}
			var perm, shape []int
			var rest []byte
			for a := range letters {
				if a != j && a != k {
					perm, shape, rest = append(perm, a), append(shape, sh[a]), append(rest, letters[a])
				}
			}
			t = Transpose(t, append(perm, j, k)...)
			t = Reshape(t, append(shape, n*n)...)
			t = Slice(t, len(shape), 0, n*n, n+1)
			letters = append(rest, c)
		}
		for j, c := range letters {
			d := t.Shape()[j]
			if n, seen := size[c]; seen && n != d {
				errorf(op, "spec %q: letter %q has size %d in one operand and %d in operand %d (%s)", spec, c, n, d, i, operands[i].TypeString())
			}
			size[c] = d
			count[c]++
		}
		terms[i] = einsumTerm{t: t, letters: letters}
	}
	d := resultDType(op, vals)
	needsNumeric := func() {
		if d == Bool {
			errorf(op, "spec %q sums over bool operands; convert them to a numeric dtype with AsType", spec)
		}
	}
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

// Cdist returns the p-norm distances between the rows of x1 and x2, as
// torch's cdist: x1 is [..., P, M] and x2 [..., R, M] (batch dimensions
// broadcast) and out[..., i, j] = ‖x1[..., i, :] - x2[..., j, :]‖_p, of
// shape [..., P, R]. p is in [0, ∞]: p = 0 counts the differing
// coordinates, p = ∞ takes the largest absolute difference (0 for M = 0).
// Integer operands give f64. The distances are computed from the
// differences directly (exact, with memory for [..., P, R, M]; torch's
// matrix-product shortcut for p = 2 is not used). Derivatives follow
// torch's convention: at a zero distance the gradient is 0 (a
// subgradient), not NaN, for every p, and a zero coordinate difference
// contributes 0 for p < 1; p = 0 has no derivative. Cdist panics with
// *Error when an operand is nil or bool or has rank below 2, the last
// dimensions differ, the batch dimensions do not broadcast, or p is
// negative or NaN.
func Cdist(x1, x2 *Tensor, p float64) *Tensor {
	const op = "peel.Cdist"
	defer interp.Annotate(op)
	checkTensor(op, x1)
	checkTensor(op, x2)
	if x1.DType() == Bool || x2.DType() == Bool {
		errorf(op, "operands %s and %s: bool has no distance (convert with AsType)", x1.TypeString(), x2.TypeString())
	}
	if x1.Rank() < 2 || x2.Rank() < 2 {
		errorf(op, "operands %s and %s must have rank at least 2 ([..., rows, features])", x1.TypeString(), x2.TypeString())
	}
	if math.IsNaN(p) || p < 0 {
		errorf(op, "p = %v; need p in [0, ∞]", p)
	}
	m1, m2 := x1.Shape()[x1.Rank()-1], x2.Shape()[x2.Rank()-1]
	if m1 != m2 {
		errorf(op, "operands %s and %s differ in their last (feature) dimension", x1.TypeString(), x2.TypeString())
	}
	d := PromoteTypes(x1.DType(), x2.DType())
	if !d.IsFloat() {
		d = Float64
	}
	a := Unsqueeze(AsType(x1, d), -2)
	b := Unsqueeze(AsType(x2, d), -3)
	ts, _ := operands(op, a, b)
	diff := bin(prims.Sub, ts[0], ts[1])
	last := []int{diff.Rank() - 1}
	sum := func(t *Tensor) *Tensor { return reduceBind(prims.ReduceSum, t, last, false) }
	switch {
	case p == 0:
		return sum(AsType(bin(prims.Ne, diff, zerosOf(diff)), d))
	case p == 1:
		return sum(un(prims.Abs, diff))
	case math.IsInf(p, 1):
		if m1 == 0 {
			return sum(diff)
		}
		return reduceBind(prims.ReduceMax, un(prims.Abs, diff), last, false)
	}
	var s *Tensor
	if p == 2 {
		s = sum(bin(prims.Mul, diff, diff))
	} else {
		ad := un(prims.Abs, diff)
		nz := bin(prims.Gt, ad, zerosOf(ad))
		safe := sel(nz, ad, fill(1, ad))
		s = sum(sel(nz, bin(prims.Pow, safe, fill(p, ad)), zerosOf(ad)))
	}
	// The double select keeps the derivative finite at s = 0.
	pos := bin(prims.Gt, s, zerosOf(s))
	safe := sel(pos, s, fill(1, s))
	var r *Tensor
	if p == 2 {
		r = un(prims.Sqrt, safe)
	} else {
		r = bin(prims.Pow, safe, fill(1/p, s))
	}
	return sel(pos, r, zerosOf(s))
}
