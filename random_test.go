package peel

import (
	"errors"
	"math"
	"math/bits"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// refThreefry is an independent Go implementation of Threefry-2x32 with
// 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3"), the oracle for the tensor pipeline.
func refThreefry(k0, k1, x0, x1 uint32) (uint32, uint32) {
	ks := [3]uint32{k0, k1, 0x1BD11BDA ^ k0 ^ k1}
	rot := [8]int{13, 15, 26, 6, 17, 29, 16, 24}
	x0 += ks[0]
	x1 += ks[1]
	for g := 0; g < 5; g++ {
		for r := 0; r < 4; r++ {
			x0 += x1
			x1 = bits.RotateLeft32(x1, rot[4*(g%2)+r])
			x1 ^= x0
		}
		x0 += ks[(g+1)%3]
		x1 += ks[(g+2)%3] + uint32(g+1)
	}
	return x0, x1
}

// refBlock is the 64 bits of element i of a sample drawn with key (k0, k1).
func refBlock(k0, k1 uint32, i uint64) (uint32, uint32) {
	return refThreefry(k0, k1, uint32(i>>32), uint32(i))
}

func keyOf(t *testing.T, key *Tensor) (uint32, uint32) {
	t.Helper()
	w := key.Int64s()
	if len(w) != 2 {
		t.Fatalf("key has %d words", len(w))
	}
	for _, x := range w {
		if x < 0 || x >= 1<<32 {
			t.Fatalf("key word %d is not a 32-bit unsigned value", x)
		}
	}
	return uint32(w[0]), uint32(w[1])
}

func TestRefThreefryKnownAnswers(t *testing.T) {
	// Known-answer vectors of the Random123 reference for 20 rounds.
	cases := []struct{ k0, k1, x0, x1, y0, y1 uint32 }{
		{0, 0, 0, 0, 0x6b200159, 0x99ba4efe},
		{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
		{0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0},
	}
	for _, c := range cases {
		y0, y1 := refThreefry(c.k0, c.k1, c.x0, c.x1)
		if y0 != c.y0 || y1 != c.y1 {
			t.Errorf("threefry(%#x,%#x,%#x,%#x) = %#x,%#x; want %#x,%#x", c.k0, c.k1, c.x0, c.x1, y0, y1, c.y0, c.y1)
		}
	}
}

func TestKey(t *testing.T) {
	for _, c := range []struct {
		seed   int64
		k0, k1 uint32
	}{
		{0, 0, 0},
		{1, 0, 1},
		{0x13198a2e03707344, 0x13198a2e, 0x03707344},
		{-1, 0xffffffff, 0xffffffff},
		{math.MinInt64, 0x80000000, 0},
	} {
		key := Key(c.seed)
		if got := key.Shape(); len(got) != 1 || got[0] != 2 || key.DType() != Int64 {
			t.Fatalf("Key(%d) is %s", c.seed, key.TypeString())
		}
		k0, k1 := keyOf(t, key)
		if k0 != c.k0 || k1 != c.k1 {
			t.Errorf("Key(%d) = %#x,%#x; want %#x,%#x", c.seed, k0, k1, c.k0, c.k1)
		}
	}
}

func TestFoldInKnownAnswers(t *testing.T) {
	// FoldIn is one Threefry block with data as the counter, so the
	// known-answer vectors check the whole primitive pipeline.
	cases := []struct {
		seed, data int64
		y0, y1     uint32
	}{
		{0, 0, 0x6b200159, 0x99ba4efe},
		{-1, -1, 0x1cb996fc, 0xbb002be7},
		{0x13198a2e03707344, 0x243f6a8885a308d3, 0xc4923a9c, 0x483df7a0},
	}
	for _, c := range cases {
		y0, y1 := keyOf(t, FoldIn(Key(c.seed), c.data))
		if y0 != c.y0 || y1 != c.y1 {
			t.Errorf("FoldIn(Key(%#x), %#x) = %#x,%#x; want %#x,%#x", c.seed, c.data, y0, y1, c.y0, c.y1)
		}
	}
}

func TestFoldInDiffers(t *testing.T) {
	key := Key(42)
	seen := map[[2]uint32]int64{}
	k0, k1 := keyOf(t, key)
	seen[[2]uint32{k0, k1}] = -1
	for _, d := range []int64{0, 1, 2, 3, 100, 1 << 32, -1, math.MaxInt64} {
		f := FoldIn(key, d)
		y0, y1 := keyOf(t, f)
		w0, w1 := refThreefry(k0, k1, uint32(uint64(d)>>32), uint32(d))
		if y0 != w0 || y1 != w1 {
			t.Errorf("FoldIn(key, %d) = %#x,%#x; want %#x,%#x", d, y0, y1, w0, w1)
		}
		if prev, dup := seen[[2]uint32{y0, y1}]; dup {
			t.Errorf("FoldIn(key, %d) equals the key for data %d", d, prev)
		}
		seen[[2]uint32{y0, y1}] = d
	}
}

func TestSplitKey(t *testing.T) {
	key := Key(7)
	k0, k1 := keyOf(t, key)
	for _, n := range []int{0, 1, 2, 5, 1000} {
		keys := SplitKeysStacked(key, n)
		if got := keys.Shape(); len(got) != 2 || got[0] != n || got[1] != 2 || keys.DType() != Int64 {
			t.Fatalf("SplitKeysStacked(key, %d) is %s", n, keys.TypeString())
		}
		w := keys.Int64s()
		seen := map[[2]int64]bool{{int64(k0), int64(k1)}: true}
		for i := 0; i < n; i++ {
			y0, y1 := refBlock(k0, k1, uint64(i))
			got := [2]int64{w[2*i], w[2*i+1]}
			if got != [2]int64{int64(y0), int64(y1)} {
				t.Fatalf("SplitKeysStacked(key, %d)[%d] = %v; want %#x,%#x", n, i, got, y0, y1)
			}
			if seen[got] {
				t.Fatalf("SplitKeysStacked(key, %d)[%d] repeats a key", n, i)
			}
			seen[got] = true
		}
	}
}

func TestSplitOfSplit(t *testing.T) {
	key := Key(3)
	first := SplitKeysStacked(key, 2).Int64s()
	again := SplitKeysStacked(key, 2).Int64s()
	for i := range first {
		if first[i] != again[i] {
			t.Fatalf("SplitKeysStacked is not deterministic: %v vs %v", first, again)
		}
	}
	k := FromInt64s(first[:2])
	sub := SplitKeysStacked(k, 2).Int64s()
	for i := 0; i < 4; i += 2 {
		if (sub[i] == first[0] && sub[i+1] == first[1]) || (sub[i] == first[2] && sub[i+1] == first[3]) {
			t.Fatalf("SplitKeysStacked of a split key repeats a key: %v %v", first, sub)
		}
	}
}

func TestUniformMatchesReference(t *testing.T) {
	key := Key(12345)
	k0, k1 := keyOf(t, key)
	const n = 257
	u64 := Uniform(key, Float64, n).Float64s()
	u32 := Uniform(key, Float32, n).Float32s()
	for i := 0; i < n; i++ {
		y0, y1 := refBlock(k0, k1, uint64(i))
		w64 := float64(uint64(y0>>5)<<26|uint64(y1>>6)) / (1 << 53)
		w32 := float32(y0>>9) / (1 << 23)
		if u64[i] != w64 {
			t.Fatalf("Uniform f64[%d] = %v; want %v", i, u64[i], w64)
		}
		if u32[i] != w32 {
			t.Fatalf("Uniform f32[%d] = %v; want %v", i, u32[i], w32)
		}
	}
}

// TestUniformGolden pins the first values of Uniform(Key(0), Float64, 4)
// so that any change to the bit pipeline (counters, word order, bit
// selection) is caught. The values were recorded from this
// implementation after checking them against the reference above.
func TestUniformGolden(t *testing.T) {
	want := []float64{
		0.41845711022987275,
		0.21629545691701901,
		0.96532146359257376,
		0.5745005376203236,
	}
	got := Uniform(Key(0), Float64, 4).Float64s()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Uniform(Key(0), Float64, 4)[%d] = %.17g; want %.17g", i, got[i], want[i])
		}
	}
}

func TestSamplersDeterministic(t *testing.T) {
	key := Key(99)
	for _, dt := range []DType{Float32, Float64} {
		for name, f := range map[string]func() *Tensor{
			"Uniform": func() *Tensor { return Uniform(key, dt, 3, 50) },
			"Normal":  func() *Tensor { return Normal(key, dt, 3, 50) },
		} {
			a, b := f(), f()
			if !equalBits(a, b) {
				t.Errorf("%s(%v) differs between two calls with one key", name, dt)
			}
			if got := a.Shape(); len(got) != 2 || got[0] != 3 || got[1] != 50 || a.DType() != dt {
				t.Errorf("%s(%v, 3, 50) is %s", name, dt, a.TypeString())
			}
		}
	}
	a, b := Bernoulli(key, 0.5, 200).Bools(), Bernoulli(key, 0.5, 200).Bools()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("Bernoulli differs between two calls with one key")
		}
	}
	// Different keys give different samples.
	if equalBits(Uniform(Key(1), Float64, 16), Uniform(Key(2), Float64, 16)) {
		t.Errorf("Uniform gives the same sample for two keys")
	}
}

func equalBits(a, b *Tensor) bool {
	switch a.DType() {
	case Float32:
		x, y := a.Float32s(), b.Float32s()
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return true
	default:
		x, y := a.Float64s(), b.Float64s()
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return true
	}
}

func asFloat64s(x *Tensor) []float64 {
	if x.DType() == Float32 {
		f := x.Float32s()
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out
	}
	return x.Float64s()
}

// moments returns the mean, variance, skewness and excess kurtosis.
func moments(x []float64) (mean, variance, skew, kurt float64) {
	n := float64(len(x))
	for _, v := range x {
		mean += v
	}
	mean /= n
	var m2, m3, m4 float64
	for _, v := range x {
		d := v - mean
		m2 += d * d
		m3 += d * d * d
		m4 += d * d * d * d
	}
	m2, m3, m4 = m2/n, m3/n, m4/n
	return mean, m2, m3 / math.Pow(m2, 1.5), m4/(m2*m2) - 3
}

// within reports whether got is within k standard errors se of want.
func within(t *testing.T, what string, got, want, se, k float64) {
	t.Helper()
	if math.Abs(got-want) > k*se {
		t.Errorf("%s = %.6g; want %.6g ± %.3g (%g standard errors of %.3g)", what, got, want, k*se, k, se)
	}
}

func TestUniformStatistics(t *testing.T) {
	const n = 100000
	for _, dt := range []DType{Float32, Float64} {
		x := asFloat64s(Uniform(Key(2024), dt, n))
		step := math.Ldexp(1, -23)
		if dt == Float64 {
			step = math.Ldexp(1, -53)
		}
		for i, v := range x {
			if !(v >= 0 && v < 1) {
				t.Fatalf("%v: element %d = %v is outside [0, 1)", dt, i, v)
			}
			if q := v / step; q != math.Trunc(q) {
				t.Fatalf("%v: element %d = %v is not a multiple of %g", dt, i, v, step)
			}
		}
		mean, variance, _, _ := moments(x)
		// Var(u) = 1/12; Var((u-1/2)^2) = 1/80 - 1/144.
		within(t, dt.String()+" uniform mean", mean, 0.5, math.Sqrt(1.0/12/n), 5)
		within(t, dt.String()+" uniform variance", variance, 1.0/12, math.Sqrt((1.0/80-1.0/144)/n), 5)
		// A coarse histogram: each of 10 bins holds n/10 ± 5 SE.
		var bins [10]int
		for _, v := range x {
			bins[int(v*10)]++
		}
		for b, c := range bins {
			within(t, dt.String()+" histogram bin "+string(rune('0'+b)), float64(c), n/10, math.Sqrt(n*0.1*0.9), 5)
		}
	}
}

func TestNormalStatistics(t *testing.T) {
	const n = 100000
	for _, dt := range []DType{Float32, Float64} {
		x := asFloat64s(Normal(Key(77), dt, n))
		for i, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%v: element %d = %v", dt, i, v)
			}
		}
		mean, variance, skew, kurt := moments(x)
		within(t, dt.String()+" normal mean", mean, 0, math.Sqrt(1.0/n), 5)
		within(t, dt.String()+" normal variance", variance, 1, math.Sqrt(2.0/n), 5)
		within(t, dt.String()+" normal skewness", skew, 0, math.Sqrt(6.0/n), 8)
		within(t, dt.String()+" normal excess kurtosis", kurt, 0, math.Sqrt(24.0/n), 8)
		// Tail mass beyond 2σ is 2(1-Φ(2)) ≈ 0.0455.
		var tail float64
		for _, v := range x {
			if math.Abs(v) > 2 {
				tail++
			}
		}
		p := math.Erfc(2 / math.Sqrt2)
		within(t, dt.String()+" normal mass beyond 2σ", tail/n, p, math.Sqrt(p*(1-p)/n), 5)
	}
}

func TestNormalMatchesReference(t *testing.T) {
	// Float32 Normal uses both words of one block per element.
	key := Key(5)
	k0, k1 := keyOf(t, key)
	const n = 100
	got := Normal(key, Float32, n).Float32s()
	for i := 0; i < n; i++ {
		y0, y1 := refBlock(k0, k1, uint64(i))
		u1 := float64(y0>>9) / (1 << 23)
		u2 := float64(y1>>9) / (1 << 23)
		want := math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
		if math.Abs(float64(got[i])-want) > 1e-5*math.Max(1, math.Abs(want)) {
			t.Fatalf("Normal f32[%d] = %v; want %v", i, got[i], want)
		}
	}
}

func TestNormalExtremeUniform(t *testing.T) {
	// The largest f32 uniform below 1 must not produce log(0): 1-u is at
	// least 2^-23, so |z| ≤ sqrt(2·23·ln 2) ≈ 5.65.
	x := asFloat64s(Normal(Key(11), Float32, 100000))
	lim := math.Sqrt(2 * 23 * math.Ln2)
	for i, v := range x {
		if math.Abs(v) > lim+1e-3 {
			t.Fatalf("Normal f32[%d] = %v exceeds the Box–Muller bound %v", i, v, lim)
		}
	}
}

func TestBernoulli(t *testing.T) {
	const n = 100000
	for _, p := range []float64{0, 0.01, 0.3, 0.5, 0.9, 1} {
		b := Bernoulli(Key(31), p, n)
		if b.DType() != Bool {
			t.Fatalf("Bernoulli is %s, not bool", b.TypeString())
		}
		var c float64
		for _, v := range b.Bools() {
			if v {
				c++
			}
		}
		switch p {
		case 0, 1:
			if c != p*n {
				t.Errorf("Bernoulli(p=%v) gave %v trues of %d", p, c, n)
			}
		default:
			within(t, "Bernoulli rate", c/n, p, math.Sqrt(p*(1-p)/n), 5)
		}
	}
	if got := Bernoulli(Key(1), 0.5, 2, 3).Shape(); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("Bernoulli(…, 2, 3) has shape %v", got)
	}
}

func TestSampleShapes(t *testing.T) {
	key := Key(8)
	for _, shape := range [][]int{{}, {0}, {1}, {3, 0, 2}, {2, 3, 4}} {
		for _, dt := range []DType{Float32, Float64} {
			for name, f := range map[string]func(*Tensor, DType, ...int) *Tensor{"Uniform": Uniform, "Normal": Normal} {
				x := f(key, dt, shape...)
				if got := x.Shape(); len(got) != len(shape) || x.Size() != rngSize(shape) || x.DType() != dt {
					t.Errorf("%s(%v, %v) is %s", name, dt, shape, x.TypeString())
				}
			}
		}
	}
	// A sample is a prefix-stable function of the element index: the
	// first elements do not depend on how many are drawn or the shape.
	a := Uniform(key, Float64, 2, 5).Float64s()
	b := Uniform(key, Float64, 7).Float64s()
	for i := range b {
		if a[i] != b[i] {
			t.Fatalf("Uniform element %d depends on the shape: %v vs %v", i, a[i], b[i])
		}
	}
}

func TestRandomErrors(t *testing.T) {
	good := Key(0)
	cases := []rngErrCase{
		{"nil key", "peel.Uniform", func() { Uniform(nil, Float64, 2) }},
		{"f64 key", "peel.Uniform", func() { Uniform(FromFloat64s([]float64{0, 1}), Float64, 2) }},
		{"key of 3 words", "peel.SplitKeysStacked", func() { SplitKeysStacked(FromInt64s([]int64{0, 1, 2}), 2) }},
		{"key of shape [1,2]", "peel.FoldIn", func() { FoldIn(FromInt64s([]int64{0, 1}, 1, 2), 2) }},
		{"batch of keys", "peel.Normal", func() { Normal(SplitKeysStacked(good, 3), Float32, 2) }},
		{"negative n", "peel.SplitKeysStacked", func() { SplitKeysStacked(good, -1) }},
		{"int dtype", "peel.Uniform", func() { Uniform(good, Int64, 2) }},
		{"bool dtype", "peel.Normal", func() { Normal(good, Bool, 2) }},
		{"negative dim", "peel.Uniform", func() { Uniform(good, Float32, 2, -1) }},
		{"negative dim normal", "peel.Normal", func() { Normal(good, Float64, -3) }},
		{"negative dim bernoulli", "peel.Bernoulli", func() { Bernoulli(good, 0.5, -3) }},
		{"p < 0", "peel.Bernoulli", func() { Bernoulli(good, -0.1, 2) }},
		{"p > 1", "peel.Bernoulli", func() { Bernoulli(good, 1.5, 2) }},
		{"p NaN", "peel.Bernoulli", func() { Bernoulli(good, math.NaN(), 2) }},
	}
	checkRngErrors(t, cases)
}

func TestUniformRangeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Int64().Draw(t, "seed")
		data := rapid.Int64().Draw(t, "data")
		n := rapid.IntRange(0, 64).Draw(t, "n")
		key := FoldIn(Key(seed), data)
		for _, v := range Uniform(key, Float64, n).Float64s() {
			if !(v >= 0 && v < 1) {
				t.Fatalf("Uniform f64 gave %v", v)
			}
		}
		for _, v := range Uniform(key, Float32, n).Float32s() {
			if !(v >= 0 && v < 1) {
				t.Fatalf("Uniform f32 gave %v", v)
			}
		}
		for _, v := range Normal(key, Float32, n).Float32s() {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("Normal f32 gave %v", v)
			}
		}
	})
}

// rngErrCase is a call that must panic with a *peel.Error naming op.
type rngErrCase struct {
	name, op string
	f        func()
}

// checkRngErrors checks that every case panics with a *peel.Error whose
// message starts with its op.
func checkRngErrors(t *testing.T, cases []rngErrCase) {
	t.Helper()
	for _, c := range cases {
		err := Catch(c.f)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %v; want a *peel.Error", c.name, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.op+": ") {
			t.Errorf("%s: error %q does not name %s", c.name, err, c.op)
		}
	}
}
