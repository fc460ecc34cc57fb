package peel_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"pgregory.net/rapid"
)

// einsumRef evaluates spec (numpy.einsum semantics: repeated letters,
// ellipses broadcasting as numpy does, the implicit form) over ops by
// looping over every letter's range, in float64. It returns the output's
// shape and row-major values.
func einsumRef(spec string, ops []*peel.Tensor) ([]int, []float64) {
	s := strings.ReplaceAll(spec, " ", "")
	lhs, out, explicit := strings.Cut(s, "->")
	ins := strings.Split(lhs, ",")
	// Expand each operand's subscripts to one label per axis; the
	// ellipsis dimensions (right-aligned) are labels '0', '1', ….
	nell := make([]int, len(ins))
	maxEll := 0
	for i, in := range ins {
		if strings.Contains(in, "...") {
			nell[i] = ops[i].Rank() - (len(in) - 3)
			maxEll = max(maxEll, nell[i])
		}
	}
	ell := func(n int) string {
		var b strings.Builder
		for k := maxEll - n; k < maxEll; k++ {
			b.WriteByte(byte('0' + k))
		}
		return b.String()
	}
	labels := make([]string, len(ins))
	for i, in := range ins {
		labels[i] = strings.Replace(in, "...", ell(nell[i]), 1)
	}
	if !explicit {
		cnt := map[byte]int{}
		for _, in := range ins {
			for j := 0; j < len(in); j++ {
				cnt[in[j]]++
			}
		}
		out = ell(maxEll)
		for c := byte('A'); c <= 'z'; c++ {
			if cnt[c] == 1 && (c <= 'Z' || c >= 'a') {
				out += string(c)
			}
		}
	} else {
		out = strings.Replace(out, "...", ell(maxEll), 1)
	}
	size := map[byte]int{}
	var letters []byte
	for i, lb := range labels {
		for j := 0; j < len(lb); j++ {
			c := lb[j]
			if _, ok := size[c]; !ok {
				letters = append(letters, c)
				size[c] = 1
			}
			if d := ops[i].Shape()[j]; d != 1 {
				size[c] = d
			}
		}
	}
	oshape := make([]int, len(out))
	for j := range out {
		oshape[j] = size[out[j]]
	}
	strides := func(sh []int) []int {
		st := make([]int, len(sh))
		p := 1
		for j := len(sh) - 1; j >= 0; j-- {
			st[j] = p
			p *= sh[j]
		}
		return st
	}
	n := 1
	for _, d := range oshape {
		n *= d
	}
	res := make([]float64, n)
	vals := make([][]float64, len(ops))
	for i, o := range ops {
		vals[i] = o.Float64s()
	}
	val := map[byte]int{}
	var loop func(l int)
	loop = func(l int) {
		if l < len(letters) {
			for v := 0; v < size[letters[l]]; v++ {
				val[letters[l]] = v
				loop(l + 1)
			}
			return
		}
		p := 1.0
		for i, lb := range labels {
			sh, st := ops[i].Shape(), strides(ops[i].Shape())
			at := 0
			for j := 0; j < len(lb); j++ {
				if sh[j] != 1 { // size-1 dimensions broadcast
					at += val[lb[j]] * st[j]
				}
			}
			p *= vals[i][at]
		}
		at, st := 0, strides(oshape)
		for j := 0; j < len(out); j++ {
			at += val[out[j]] * st[j]
		}
		res[at] += p
	}
	loop(0)
	return oshape, res
}

func einsumRand(r *rand.Rand, shape ...int) *peel.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*r.Float64() - 1
	}
	return peel.Reshape(peel.FromFloat64s(v, n), shape...)
}

// einsumCompare reports how got differs from (shape, want), or "".
func einsumCompare(got *peel.Tensor, shape []int, want []float64, tol float64) string {
	if fmt.Sprint(got.Shape()) != fmt.Sprint(shape) {
		return fmt.Sprintf("shape %v, want %v", got.Shape(), shape)
	}
	g := got.Float64s()
	for i := range want {
		if math.Abs(g[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			return fmt.Sprintf("element %d is %v, want %v", i, g[i], want[i])
		}
	}
	return ""
}

func TestEinsumDiagonalEllipsisImplicit(t *testing.T) {
	cases := []struct {
		spec   string
		shapes [][]int
	}{
		// Repeated letters.
		{"ii->", [][]int{{4, 4}}},
		{"ii->i", [][]int{{4, 4}}},
		{"NMKK->NM", [][]int{{2, 3, 4, 4}}},
		{"iij->ij", [][]int{{3, 3, 2}}},
		{"iji->ij", [][]int{{3, 2, 3}}},
		{"ij,jj->i", [][]int{{2, 3}, {3, 3}}},
		{"bii->bi", [][]int{{2, 3, 3}}},
		{"bii->b", [][]int{{2, 3, 3}}},
		{"iii->i", [][]int{{3, 3, 3}}},
		{"iii->", [][]int{{3, 3, 3}}},
		{"ijij->ij", [][]int{{2, 3, 2, 3}}},
		{"ii,ii->i", [][]int{{3, 3}, {3, 3}}},
		{"ii->i", [][]int{{0, 0}}},
		{"ii->", [][]int{{1, 1}}},
		// Ellipses.
		{"...ij,...jk->...ik", [][]int{{2, 1, 3, 4}, {5, 4, 2}}},
		{"...i,...i->...", [][]int{{2, 3, 4}, {3, 4}}},
		{"...i,...i->...", [][]int{{2, 1, 4}, {1, 3, 4}}},
		{"i...->...i", [][]int{{3, 2, 4}}},
		{"i...->...i", [][]int{{3}}},
		{"...->...", [][]int{{2, 3}}},
		{"...ii->...i", [][]int{{2, 3, 3}}},
		{"i...i->...", [][]int{{3, 2, 5, 3}}},
		{"...,...->...", [][]int{{2, 1}, {3}}},
		{"ij...,jk...->ik...", [][]int{{2, 3, 4}, {3, 5, 1}}},
		{"...i,i->...", [][]int{{2, 3, 4}, {4}}},
		{"ij->...ij", [][]int{{2, 3}}},
		{"...ij->i...j", [][]int{{4, 1, 2, 3}}},
		// Implicit form.
		{"ij,jk", [][]int{{2, 3}, {3, 4}}},
		{"ii", [][]int{{3, 3}}},
		{"ji", [][]int{{2, 3}}},
		{"ij", [][]int{{2, 3}}},
		{"iij", [][]int{{3, 3, 2}}},
		{"ba,Ab", [][]int{{2, 3}, {4, 2}}},
		{"...ij,...jk", [][]int{{2, 1, 3, 4}, {5, 4, 2}}},
		{"i,i", [][]int{{4}, {4}}},
		{"i,j", [][]int{{2}, {3}}},
		{"", [][]int{{}}},
		// Explicit cases without the new features.
		{"ij,jk->ik", [][]int{{2, 3}, {3, 4}}},
		{"bij,bjk->bik", [][]int{{2, 2, 3}, {2, 3, 4}}},
		{"i,i->", [][]int{{5}, {5}}},
		{"ab,cd,bc->da", [][]int{{2, 3}, {4, 5}, {3, 4}}},
		{"b i j , b j k -> b k i", [][]int{{2, 2, 3}, {2, 3, 4}}},
		{",->", [][]int{{}, {}}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		ops := make([]*peel.Tensor, len(c.shapes))
		for j, s := range c.shapes {
			ops[j] = einsumRand(r, s...)
		}
		ws, wv := einsumRef(c.spec, ops)
		var got *peel.Tensor
		if err := peel.Catch(func() { got = peel.Einsum(c.spec, ops...) }); err != nil {
			t.Fatalf("Einsum(%q): %v", c.spec, err)
		}
		if d := einsumCompare(got, ws, wv, 1e-12); d != "" {
			t.Errorf("Einsum(%q) on %v: %s", c.spec, c.shapes, d)
		}
	}
	// Fixed values.
	a := peel.FromFloat64s([]float64{1, 2, 3, 4}, 2, 2)
	if d := einsumCompare(peel.Einsum("ii->", a), []int{}, []float64{5}, 0); d != "" {
		t.Errorf("trace: %s", d)
	}
	if d := einsumCompare(peel.Einsum("ii->i", a), []int{2}, []float64{1, 4}, 0); d != "" {
		t.Errorf("diagonal: %s", d)
	}
	if d := einsumCompare(peel.Einsum("ji", a), []int{2, 2}, []float64{1, 3, 2, 4}, 0); d != "" {
		t.Errorf("implicit transpose: %s", d)
	}
	// Bool diagonal (no summation).
	b := peel.FromBools([]bool{true, false, false, false}, 2, 2)
	if d := einsumCompare(peel.AsType(peel.Einsum("ii->i", b), peel.Float64), []int{2}, []float64{1, 0}, 0); d != "" {
		t.Errorf("bool diagonal: %s", d)
	}
}

func TestEinsumErrors(t *testing.T) {
	x := peel.Zeros(peel.Float64, 2, 3)
	sq := peel.Zeros(peel.Float64, 3, 3)
	cases := []struct {
		name  string
		f     func()
		wants []string
	}{
		{"ellipsis twice", func() { peel.Einsum("...i...->i", x) }, []string{"ellipsis", "twice", "operand 0"}},
		{"ellipsis twice in output", func() { peel.Einsum("...i->......", x) }, []string{"ellipsis", "twice", "output"}},
		{"lone dot", func() { peel.Einsum("..i->i", x) }, []string{"'.'", "ellipsis"}},
		{"four dots", func() { peel.Einsum("....i->i", x) }, []string{"'.'"}},
		{"repeated letter sizes", func() { peel.Einsum("ii->i", x) }, []string{"letter 'i' repeats in operand 0", "sizes 2 and 3"}},
		{"repeated letter sizes implicit", func() { peel.Einsum("ii", x) }, []string{"letter 'i' repeats", "sizes 2 and 3"}},
		{"ellipsis not broadcastable", func() { peel.Einsum("...i,...i->...i", peel.Zeros(peel.Float64, 2, 3), peel.Zeros(peel.Float64, 4, 3)) }, []string{"ellipsis", "broadcast"}},
		{"output lacks ellipsis", func() { peel.Einsum("...i->i", x) }, []string{"ellipsis", "output"}},
		{"too many letters with ellipsis", func() { peel.Einsum("ijk...->ijk", x) }, []string{"besides the ellipsis"}},
		{"rank mismatch", func() { peel.Einsum("ijk->i", x) }, []string{"name 3 axes"}},
		{"not a letter", func() { peel.Einsum("i1->i", x) }, []string{"not a letter"}},
		{"not a letter implicit", func() { peel.Einsum("i-", peel.Zeros(peel.Float64, 2, 2)) }, []string{"not a letter"}},
		{"output letter missing", func() { peel.Einsum("ii->k", sq) }, []string{"output letter 'k' appears in no operand"}},
		{"output letter repeats", func() { peel.Einsum("ii->ii", sq) }, []string{"output letter 'i' repeats"}},
		{"letter sizes differ", func() { peel.Einsum("ij,jj->i", x, peel.Zeros(peel.Float64, 2, 2)) }, []string{"letter 'j' has size"}},
		{"operand count", func() { peel.Einsum("ii", sq, sq) }, []string{"names 1 operands, got 2"}},
		{"nil", func() { peel.Einsum("ii,...", sq, nil) }, []string{"nil"}},
		{"bool trace", func() { peel.Einsum("ii->", peel.FromBools([]bool{true, false, false, true}, 2, 2)) }, []string{"bool"}},
	}
	for _, c := range cases {
		err := peel.Catch(c.f)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		var pe *peel.Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v is not a *peel.Error", c.name, err)
			continue
		}
		msg := err.Error()
		for _, w := range append([]string{"peel.Einsum"}, c.wants...) {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not contain %q", c.name, msg, w)
			}
		}
	}
}

// TestRapidEinsumSpecs compares random specs with repeated letters,
// ellipses (with broadcasting) and the implicit form against the loop
// reference.
func TestRapidEinsumSpecs(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		const pool = "abcdA"
		size := map[byte]int{}
		for j := 0; j < len(pool); j++ {
			size[pool[j]] = rapid.IntRange(1, 3).Draw(rt, "size")
		}
		nEll := rapid.IntRange(0, 2).Draw(rt, "nEll")
		eshape := make([]int, nEll)
		for k := range eshape {
			eshape[k] = rapid.IntRange(1, 3).Draw(rt, "ellSize")
		}
		nops := rapid.IntRange(1, 3).Draw(rt, "nops")
		ins := make([]string, nops)
		ops := make([]*peel.Tensor, nops)
		used := map[byte]bool{}
		anyEll := false
		for i := range ins {
			nl := rapid.IntRange(0, 4).Draw(rt, "nletters")
			var sub []byte
			for range nl {
				c := pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "letter")]
				sub = append(sub, c)
				used[c] = true
			}
			var shape []int
			if rapid.Bool().Draw(rt, "ellipsis") {
				anyEll = true
				pos := rapid.IntRange(0, len(sub)).Draw(rt, "pos")
				ne := rapid.IntRange(0, nEll).Draw(rt, "opEll")
				var es []int
				for _, d := range eshape[nEll-ne:] {
					if rapid.Bool().Draw(rt, "one") {
						d = 1
					}
					es = append(es, d)
				}
				for _, c := range sub[:pos] {
					shape = append(shape, size[c])
				}
				shape = append(shape, es...)
				for _, c := range sub[pos:] {
					shape = append(shape, size[c])
				}
				ins[i] = string(sub[:pos]) + "..." + string(sub[pos:])
			} else {
				for _, c := range sub {
					shape = append(shape, size[c])
				}
				ins[i] = string(sub)
			}
			vals := rapid.SliceOfN(rapid.Float64Range(-1, 1), svProd(shape), svProd(shape)).Draw(rt, "vals")
			ops[i] = peel.Reshape(peel.FromFloat64s(vals, len(vals)), shape...)
		}
		spec := strings.Join(ins, ",")
		if rapid.Bool().Draw(rt, "explicit") {
			var letters []byte
			for j := 0; j < len(pool); j++ {
				if used[pool[j]] && rapid.Bool().Draw(rt, "keep") {
					letters = append(letters, pool[j])
				}
			}
			perm := rapid.Permutation(letters).Draw(rt, "order")
			out := string(perm)
			if anyEll || rapid.Bool().Draw(rt, "outEll") {
				pos := rapid.IntRange(0, len(out)).Draw(rt, "outPos")
				out = out[:pos] + "..." + out[pos:]
			}
			spec += "->" + out
		}
		ws, wv := einsumRef(spec, ops)
		var got *peel.Tensor
		if err := peel.Catch(func() { got = peel.Einsum(spec, ops...) }); err != nil {
			rt.Fatalf("Einsum(%q): %v", spec, err)
		}
		if d := einsumCompare(got, ws, wv, 1e-12); d != "" {
			rt.Fatalf("Einsum(%q): %s", spec, d)
		}
	})
}

func svProd(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func TestEinsumTransforms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 4
	a := einsumRand(r, n, n)
	// Grad of Sum(diag(A)) is the identity, checked against central
	// finite differences.
	f := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Einsum("ii->i", x)) }
	g := transforms.Grad(f)(a)
	av := a.Float64s()
	gv := g.Float64s()
	const h = 1e-6
	for k := range av {
		p, m := append([]float64(nil), av...), append([]float64(nil), av...)
		p[k] += h
		m[k] -= h
		fd := (f(peel.FromFloat64s(p, n, n)).Float64s()[0] - f(peel.FromFloat64s(m, n, n)).Float64s()[0]) / (2 * h)
		want := 0.0
		if k/n == k%n {
			want = 1
		}
		if math.Abs(gv[k]-want) > 1e-12 || math.Abs(fd-want) > 1e-6 {
			t.Errorf("grad[%d] = %v, finite difference %v, want %v", k, gv[k], fd, want)
		}
	}
	// Vmap of the trace over a batch equals a loop.
	const batch = 5
	xs := einsumRand(r, batch, n, n)
	tr := transforms.Vmap(func(x *peel.Tensor) *peel.Tensor { return peel.Einsum("ii->", x) })(xs)
	xv := xs.Float64s()
	want := make([]float64, batch)
	for b := range want {
		for i := range n {
			want[b] += xv[b*n*n+i*n+i]
		}
	}
	if d := einsumCompare(tr, []int{batch}, want, 1e-12); d != "" {
		t.Errorf("Vmap trace: %s", d)
	}
	// Vmap with an ellipsis and broadcasting against an unbatched operand.
	w := einsumRand(r, 1, n, 3)
	vm := transforms.Vmap(func(x *peel.Tensor) *peel.Tensor { return peel.Einsum("...ij,...jk->...ik", x, w) })(xs)
	ws, wv := einsumRef("z...ij,...jk->z...ik", []*peel.Tensor{peel.Reshape(xs, batch, 1, n, n), w})
	if d := einsumCompare(vm, []int{batch, 1, n, 3}, wv, 1e-12); d != "" || svProd(ws) != len(wv) {
		t.Errorf("Vmap ellipsis: %s", d)
	}
	// JVP of the trace is the trace of the tangent.
	da := einsumRand(r, n, n)
	_, tan := transforms.JVP(func(x *peel.Tensor) *peel.Tensor { return peel.Einsum("ii", x) }, a, da)
	if d := einsumCompare(tan, []int{}, []float64{peel.Einsum("ii->", da).Float64s()[0]}, 1e-12); d != "" {
		t.Errorf("JVP trace: %s", d)
	}
	// Jacrev of the diagonal: J[i, j, k] = [i == j == k].
	j := transforms.Jacrev(func(x *peel.Tensor) *peel.Tensor { return peel.Einsum("ii->i", x) })(a)
	jw := make([]float64, n*n*n)
	for i := range n {
		jw[i*n*n+i*n+i] = 1
	}
	if d := einsumCompare(j, []int{n, n, n}, jw, 0); d != "" {
		t.Errorf("Jacrev diagonal: %s", d)
	}
	// Functionalize keeps the value.
	fv := transforms.Functionalize(func(x *peel.Tensor) *peel.Tensor { return peel.Einsum("bii->b", x) })(xs)
	if d := einsumCompare(fv, []int{batch}, want, 1e-12); d != "" {
		t.Errorf("Functionalize batch trace: %s", d)
	}
	// Grad through an ellipsis contraction with broadcasting: d/dx
	// sum(x·y) over "...i,...i->..." with y broadcast is y summed over
	// the broadcast dimension.
	x1 := einsumRand(r, 1, 3)
	y1 := einsumRand(r, 2, 3)
	gx := transforms.Grad(func(x *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.Einsum("...i,...i->...", x, y1))
	})(x1)
	yv := y1.Float64s()
	if d := einsumCompare(gx, []int{1, 3}, []float64{yv[0] + yv[3], yv[1] + yv[4], yv[2] + yv[5]}, 1e-12); d != "" {
		t.Errorf("Grad ellipsis broadcast: %s", d)
	}
}
