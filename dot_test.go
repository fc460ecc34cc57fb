package peel

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"pgregory.net/rapid"
)

// svMatMulRef is a naive numpy matmul of row-major a (shape as) and b
// (shape bs).
func svMatMulRef(as, bs []int, a, b []float64) ([]int, []float64) {
	as, bs = slices.Clone(as), slices.Clone(bs)
	va, vb := len(as) == 1, len(bs) == 1
	if va {
		as = []int{1, as[0]}
	}
	if vb {
		bs = []int{bs[0], 1}
	}
	m, k, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	ba, bb := as[:len(as)-2], bs[:len(bs)-2]
	nb := max(len(ba), len(bb))
	batch := make([]int, nb)
	for i := range batch {
		da, db := 1, 1
		if j := i - (nb - len(ba)); j >= 0 {
			da = ba[j]
		}
		if j := i - (nb - len(bb)); j >= 0 {
			db = bb[j]
		}
		batch[i] = max(da, db)
		if da == 0 || db == 0 {
			batch[i] = 0
		}
	}
	out := append(slices.Clone(batch), m, n)
	res := make([]float64, svSize(out))
	svEach(out, func(o []int) {
		ia := make([]int, len(as))
		ib := make([]int, len(bs))
		for j := range ba {
			if ba[j] != 1 {
				ia[j] = o[j+nb-len(ba)]
			}
		}
		for j := range bb {
			if bb[j] != 1 {
				ib[j] = o[j+nb-len(bb)]
			}
		}
		s := 0.0
		for p := 0; p < k; p++ {
			ia[len(as)-2], ia[len(as)-1] = o[nb], p
			ib[len(bs)-2], ib[len(bs)-1] = p, o[nb+1]
			s += a[svAt(as, ia)] * b[svAt(bs, ib)]
		}
		res[svAt(out, o)] = s
	})
	if vb {
		out = slices.Delete(out, len(out)-1, len(out))
	}
	if va {
		out = slices.Delete(out, len(out)-1-btoi(!vb), len(out)-btoi(!vb))
	}
	return out, res
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// svRand returns deterministic pseudo-random values in [-1, 1).
func svRand(n int, seed uint64) []float64 {
	out := make([]float64, n)
	s := seed*0x9E3779B97F4A7C15 + 1
	for i := range out {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		out[i] = float64(s>>11)/float64(1<<53)*2 - 1
	}
	return out
}

func TestMatMul(t *testing.T) {
	cases := []struct {
		a, b []int
		want []int
	}{
		{[]int{3}, []int{3}, []int{}},
		{[]int{0}, []int{0}, []int{}},
		{[]int{3}, []int{3, 4}, []int{4}},
		{[]int{2, 3}, []int{3}, []int{2}},
		{[]int{2, 3}, []int{3, 4}, []int{2, 4}},
		{[]int{3}, []int{5, 3, 4}, []int{5, 4}},
		{[]int{5, 2, 3}, []int{3}, []int{5, 2}},
		{[]int{2, 3}, []int{5, 3, 4}, []int{5, 2, 4}},
		{[]int{2, 3}, []int{6, 5, 3, 4}, []int{6, 5, 2, 4}},
		{[]int{5, 2, 3}, []int{3, 4}, []int{5, 2, 4}},
		{[]int{5, 2, 3}, []int{5, 3, 4}, []int{5, 2, 4}},
		{[]int{2, 1, 3, 4}, []int{5, 4, 6}, []int{2, 5, 3, 6}},
		{[]int{1, 2, 3}, []int{4, 3, 2}, []int{4, 2, 2}},
		{[]int{2, 0}, []int{0, 3}, []int{2, 3}},
		{[]int{0, 3}, []int{3, 2}, []int{0, 2}},
		{[]int{0, 2, 3}, []int{1, 3, 2}, []int{0, 2, 2}},
		{[]int{1, 1}, []int{1, 1}, []int{1, 1}},
	}
	for i, c := range cases {
		av, bv := svRand(svSize(c.a), uint64(2*i+1)), svRand(svSize(c.b), uint64(2*i+2))
		ws, wv := svMatMulRef(c.a, c.b, av, bv)
		if !slices.Equal(ws, c.want) {
			t.Fatalf("reference shape %v, want %v", ws, c.want)
		}
		a, b := svF64(av, c.a...), svF64(bv, c.b...)
		svClose(t, fmt.Sprintf("MatMul(%v, %v)", c.a, c.b), MatMul(a, b), ws, wv, 1e-12)
		svClose(t, fmt.Sprintf("Dot(%v, %v)", c.a, c.b), Dot(a, b), ws, wv, 1e-12)
		// The same through float32 and through strided operands.
		a32, b32 := AsType(a, Float32), AsType(b, Float32)
		y := MatMul(a32, b32)
		if y.DType() != Float32 {
			t.Fatalf("MatMul of f32 has dtype %v", y.DType())
		}
		svClose(t, fmt.Sprintf("MatMul f32 (%v, %v)", c.a, c.b), y, ws, wv, 1e-5)
		if len(c.a) >= 2 {
			at := Transpose(Clone(MoveAxis(a, -1, -2)), svSwapLast(len(c.a))...)
			svClose(t, fmt.Sprintf("MatMul(strided %v, %v)", c.a, c.b), MatMul(at, b), ws, wv, 1e-12)
		}
	}
	// Against gonum for a plain matrix product.
	av, bv := svRand(4*7, 11), svRand(7*5, 12)
	var g mat.Dense
	g.Mul(mat.NewDense(4, 7, av), mat.NewDense(7, 5, bv))
	svClose(t, "MatMul vs gonum", MatMul(svF64(av, 4, 7), svF64(bv, 7, 5)), []int{4, 5}, g.RawMatrix().Data, 1e-12)

	// Promotion.
	ai := svI64([]int64{1, 2, 3, 4}, 2, 2)
	bi := svI64([]int64{5, 6, 7, 8}, 2, 2)
	yi := MatMul(ai, bi)
	if yi.DType() != Int64 {
		t.Fatalf("MatMul i64 has dtype %v", yi.DType())
	}
	svCheck(t, "MatMul i64", yi, []int{2, 2}, []float64{19, 22, 43, 50})
	yf := MatMul(ai, FromFloat32s([]float32{1, 0.5}, 2))
	if yf.DType() != Float32 {
		t.Fatalf("MatMul i64·f32 has dtype %v", yf.DType())
	}
	svCheck(t, "MatMul i64·f32", yf, []int{2}, []float64{2, 5})

	x := svSeq(2, 3)
	svErr(t, "peel.MatMul", func() { MatMul(x, x) }, "contracting dimensions differ", "f64[2,3]")
	svErr(t, "peel.MatMul", func() { MatMul(svSeq(3), svSeq(4)) }, "contracting")
	svErr(t, "peel.MatMul", func() { MatMul(svSeq(), x) }, "rank ≥ 1")
	svErr(t, "peel.MatMul", func() { MatMul(svSeq(2, 2, 3), svSeq(3, 3, 2)) }, "broadcast")
	svErr(t, "peel.MatMul", func() { MatMul(FromBools([]bool{true}, 1), FromBools([]bool{true}, 1)) }, "bool")
	svErr(t, "peel.MatMul", func() { MatMul(nil, x) }, "nil")
	svErr(t, "peel.Dot", func() { Dot(svSeq(3), svSeq(2)) }, "contracting")
}

// svSwapLast is the permutation swapping the last two of r axes.
func svSwapLast(r int) []int {
	p := svPerm(r)
	p[r-1], p[r-2] = p[r-2], p[r-1]
	return p
}

func TestOuter(t *testing.T) {
	a := svF64([]float64{1, 2, 3}, 3)
	b := svF64([]float64{1, 10, 100, 1000}, 2, 2)
	svCheck(t, "Outer", Outer(a, b), []int{3, 4}, []float64{1, 10, 100, 1000, 2, 20, 200, 2000, 3, 30, 300, 3000})
	svCheck(t, "Outer scalar", Outer(svF64([]float64{2}, []int{}...), a), []int{1, 3}, []float64{2, 4, 6})
	svCheck(t, "Outer empty", Outer(svSeq(0), a), []int{0, 3}, []float64{})
	y := Outer(svI64([]int64{2}, 1), FromFloat32s([]float32{0.5}, 1))
	if y.DType() != Float32 {
		t.Fatalf("Outer i64·f32 has dtype %v", y.DType())
	}
	svErr(t, "peel.Outer", func() { Outer(nil, a) }, "nil")
}

// svEinsumRef evaluates an explicit einsum by looping over every letter.
func svEinsumRef(spec string, ops []*Tensor) ([]int, []float64) {
	lhs, out, _ := strings.Cut(spec, "->")
	ins := strings.Split(lhs, ",")
	size := map[byte]int{}
	var letters []byte
	for i, in := range ins {
		for j := 0; j < len(in); j++ {
			if _, ok := size[in[j]]; !ok {
				letters = append(letters, in[j])
			}
			size[in[j]] = ops[i].Shape()[j]
		}
	}
	dims := make([]int, len(letters))
	for i, c := range letters {
		dims[i] = size[c]
	}
	oshape := make([]int, len(out))
	for i := range out {
		oshape[i] = size[out[i]]
	}
	vals := make([][]float64, len(ops))
	for i, o := range ops {
		vals[i] = o.Float64s()
	}
	res := make([]float64, svSize(oshape))
	val := map[byte]int{}
	svEach(dims, func(idx []int) {
		for i, c := range letters {
			val[c] = idx[i]
		}
		p := 1.0
		for i, in := range ins {
			ix := make([]int, len(in))
			for j := range ix {
				ix[j] = val[in[j]]
			}
			p *= vals[i][svAt(ops[i].Shape(), ix)]
		}
		ox := make([]int, len(out))
		for j := range ox {
			ox[j] = val[out[j]]
		}
		res[svAt(oshape, ox)] += p
	})
	return oshape, res
}

func TestEinsum(t *testing.T) {
	cases := []struct {
		spec   string
		shapes [][]int
	}{
		{"ij,jk->ik", [][]int{{2, 3}, {3, 4}}},
		{"bij,bjk->bik", [][]int{{2, 2, 3}, {2, 3, 4}}},
		{"i,i->", [][]int{{5}, {5}}},
		{"ij,j->i", [][]int{{2, 3}, {3}}},
		{"bhqd,bhkd->bhqk", [][]int{{2, 3, 4, 5}, {2, 3, 6, 5}}},
		{"ij->ji", [][]int{{2, 3}}},
		{"ij->", [][]int{{2, 3}}},
		{"ij->j", [][]int{{2, 3}}},
		{"i->i", [][]int{{4}}},
		{"i,j->ij", [][]int{{2}, {3}}},
		{"ij,ij->ij", [][]int{{2, 3}, {2, 3}}},
		{"ij,ij->", [][]int{{2, 3}, {2, 3}}},
		{"ij,kj->ki", [][]int{{2, 3}, {4, 3}}},
		{"ab,bc,cd->ad", [][]int{{2, 3}, {3, 4}, {4, 5}}},
		{"ab,cd,bc->da", [][]int{{2, 3}, {4, 5}, {3, 4}}},
		{"ijk,jl,lk->il", [][]int{{2, 3, 4}, {3, 5}, {5, 4}}},
		{"abc,c->", [][]int{{2, 3, 4}, {4}}},
		{"b i j , b j k -> b k i", [][]int{{2, 2, 3}, {2, 3, 4}}},
		{"ij,jk->ik", [][]int{{2, 0}, {0, 3}}},
		{"i,i,i->i", [][]int{{3}, {3}, {3}}},
		{"Ab,bC->CA", [][]int{{2, 3}, {3, 4}}},
		{"->", [][]int{{}}},
		{",->", [][]int{{}, {}}},
	}
	for i, c := range cases {
		ops := make([]*Tensor, len(c.shapes))
		for j, s := range c.shapes {
			ops[j] = svF64(svRand(svSize(s), uint64(10*i+j+1)), s...)
		}
		ws, wv := svEinsumRef(strings.ReplaceAll(c.spec, " ", ""), ops)
		svClose(t, "Einsum "+c.spec, Einsum(c.spec, ops...), ws, wv, 1e-12)
	}
	// Against MatMul.
	a, b := svF64(svRand(2*3*4*5, 1), 2, 3, 4, 5), svF64(svRand(2*3*5*6, 2), 2, 3, 5, 6)
	m := MatMul(a, b)
	svClose(t, "Einsum vs MatMul", Einsum("bhqd,bhdk->bhqk", a, b), m.Shape(), m.Float64s(), 1e-12)
	// Promotion.
	y := Einsum("i,i->", svI64([]int64{1, 2}, 2), FromFloat32s([]float32{3, 4}, 2))
	if y.DType() != Float32 {
		t.Fatalf("Einsum i64,f32 has dtype %v", y.DType())
	}
	svCheck(t, "Einsum promoted", y, []int{}, []float64{11})
	svCheck(t, "Einsum bool transpose", Einsum("ij->ji", FromBools([]bool{true, false}, 1, 2)), []int{2, 1}, []float64{1, 0})

	x := svSeq(2, 3)
	svErr(t, "peel.Einsum", func() { Einsum("ii", x) }, "repeats", "sizes 2 and 3")
	svErr(t, "peel.Einsum", func() { Einsum("ii->i", x) }, "repeats", "sizes 2 and 3")
	svErr(t, "peel.Einsum", func() { Einsum("...i->i", x) }, "ellipsis")
	svErr(t, "peel.Einsum", func() { Einsum("ij->k", x) }, "output letter 'k' appears in no operand")
	svErr(t, "peel.Einsum", func() { Einsum("ij->ii", x) }, "repeats")
	svErr(t, "peel.Einsum", func() { Einsum("ij,jk->ik", x) }, "names 2 operands, got 1")
	svErr(t, "peel.Einsum", func() { Einsum("ij,jk->ik", x, x) }, "letter 'j' has size 3")
	svErr(t, "peel.Einsum", func() { Einsum("ijk->i", x) }, "name 3 axes")
	svErr(t, "peel.Einsum", func() { Einsum("i1->i", x) }, "not a letter")
	svErr(t, "peel.Einsum", func() { Einsum("ij->i", FromBools([]bool{true, false}, 1, 2)) }, "bool")
	svErr(t, "peel.Einsum", func() { Einsum("ij,jk->ik", x, nil) }, "nil")
}

func TestRapidMatMul(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ra := rapid.IntRange(1, 4).Draw(t, "ra")
		rb := rapid.IntRange(1, 4).Draw(t, "rb")
		k := rapid.IntRange(0, 4).Draw(t, "k")
		nb := max(ra, rb) - 2
		batch := make([]int, max(nb, 0))
		for i := range batch {
			batch[i] = rapid.IntRange(1, 3).Draw(t, "batch")
		}
		shapeOf := func(r int, last2 []int, name string) []int {
			if r == 1 {
				return []int{k}
			}
			s := make([]int, r)
			for i := 0; i < r-2; i++ {
				s[i] = batch[len(batch)-(r-2)+i]
				if rapid.Bool().Draw(t, name+"1") {
					s[i] = 1
				}
			}
			copy(s[r-2:], last2)
			return s
		}
		as := shapeOf(ra, []int{rapid.IntRange(0, 4).Draw(t, "m"), k}, "a")
		bs := shapeOf(rb, []int{k, rapid.IntRange(0, 4).Draw(t, "n")}, "b")
		av, bv := svRand(svSize(as), 7), svRand(svSize(bs), 8)
		ws, wv := svMatMulRef(as, bs, av, bv)
		y := MatMul(svF64(av, as...), svF64(bv, bs...))
		if !slices.Equal(y.Shape(), ws) {
			t.Fatalf("MatMul(%v, %v) shape %v, want %v", as, bs, y.Shape(), ws)
		}
		for i, v := range y.Float64s() {
			if math.Abs(v-wv[i]) > 1e-12*max(1, math.Abs(wv[i])) {
				t.Fatalf("MatMul(%v, %v) element %d = %v, want %v", as, bs, i, v, wv[i])
			}
		}
	})
}
