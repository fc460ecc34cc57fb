package peel

import (
	"math"
	"math/bits"
	"slices"
	"testing"
)

// Statistical tolerances: every moment or frequency check allows 5
// standard errors (a false alarm has probability below 6·10⁻⁷ per check
// for a normal statistic; the seeds are fixed, so the tests are
// deterministic).
const sigmas = 5

func TestSplitKeysMatchesSplitKey(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7} {
		keys := SplitKeys(Key(99), n)
		if len(keys) != n {
			t.Fatalf("SplitKeys(_, %d) gave %d keys", n, len(keys))
		}
		rows := SplitKeysStacked(Key(99), n).Int64s()
		for i, k := range keys {
			if k.DType() != Int64 || k.Rank() != 1 || k.Shape()[0] != 2 {
				t.Fatalf("key %d is %s", i, k.TypeString())
			}
			w := k.Int64s()
			if w[0] != rows[2*i] || w[1] != rows[2*i+1] {
				t.Errorf("SplitKeys(_, %d)[%d] = %v; want row %v", n, i, w, rows[2*i:2*i+2])
			}
			keyOf(t, k)
		}
	}
}

func TestMoreSamplersDeterministic(t *testing.T) {
	logits := FromFloat64s([]float64{0, 1, 2, -1})
	floats := map[string]func(k *Tensor) *Tensor{
		"UniformRange":    func(k *Tensor) *Tensor { return UniformRange(k, Float64, -1, 4, 64) },
		"NormalScaled":    func(k *Tensor) *Tensor { return NormalScaled(k, Float32, 2, 3, 64) },
		"TruncatedNormal": func(k *Tensor) *Tensor { return TruncatedNormal(k, Float64, -1, 2, 64) },
		"Shuffle":         func(k *Tensor) *Tensor { return Shuffle(k, Arange(Float64, 0, 64, 1), 0) },
	}
	for name, f := range floats {
		if !equalBits(f(Key(5)), f(Key(5))) {
			t.Errorf("%s differs for one key", name)
		}
		if equalBits(f(Key(5)), f(Key(6))) {
			t.Errorf("%s is the same for two keys", name)
		}
	}
	ints := map[string]func(k *Tensor) *Tensor{
		"RandInt":     func(k *Tensor) *Tensor { return RandInt(k, -100, 100, 64) },
		"Permutation": func(k *Tensor) *Tensor { return Permutation(k, 64) },
		"Categorical": func(k *Tensor) *Tensor { return Categorical(k, logits, 0, 64) },
		"Choice":      func(k *Tensor) *Tensor { return Choice(k, 4, Softmax(logits, 0), 64) },
	}
	for name, f := range ints {
		if !slices.Equal(f(Key(5)).Int64s(), f(Key(5)).Int64s()) {
			t.Errorf("%s differs for one key", name)
		}
		if slices.Equal(f(Key(5)).Int64s(), f(Key(6)).Int64s()) {
			t.Errorf("%s is the same for two keys", name)
		}
	}
}

func TestUniformRangeStatistics(t *testing.T) {
	const n = 100000
	const lo, hi = -2.0, 3.0
	w := hi - lo
	for _, dt := range []DType{Float32, Float64} {
		s := UniformRange(Key(11), dt, lo, hi, 100, 1000)
		if !slices.Equal(s.Shape(), []int{100, 1000}) || s.DType() != dt {
			t.Fatalf("UniformRange gave %s", s.TypeString())
		}
		x := asFloat64s(s)
		for _, v := range x {
			if !(v >= lo && v < hi) {
				t.Fatalf("UniformRange %v gave %v outside [%v, %v)", dt, v, lo, hi)
			}
		}
		mean, variance, _, _ := moments(x)
		within(t, "UniformRange mean", mean, (lo+hi)/2, w/math.Sqrt(12*n), sigmas)
		// Var((x-μ)²) = w⁴/80 - w⁴/144 for a uniform of width w.
		within(t, "UniformRange variance", variance, w*w/12, math.Sqrt((math.Pow(w, 4)/80-math.Pow(w, 4)/144)/n), sigmas)
	}
	// A range holding one value of the dtype gives only that value.
	for _, v := range UniformRange(Key(1), Float32, 1, 1+1e-9, 100).Float32s() {
		if v != 1 {
			t.Fatalf("UniformRange f32 of [1, 1+1e-9) gave %v", v)
		}
	}
	for _, v := range UniformRange(Key(1), Float64, 1, math.Nextafter(1, 2), 100).Float64s() {
		if v != 1 {
			t.Fatalf("UniformRange f64 of [1, next(1)) gave %v", v)
		}
	}
}

func TestNormalScaledStatistics(t *testing.T) {
	const n = 100000
	const mu, sd = 3.0, 2.0
	for _, dt := range []DType{Float32, Float64} {
		x := asFloat64s(NormalScaled(Key(12), dt, mu, sd, n))
		mean, variance, _, _ := moments(x)
		within(t, "NormalScaled mean", mean, mu, sd/math.Sqrt(n), sigmas)
		within(t, "NormalScaled variance", variance, sd*sd, sd*sd*math.Sqrt(2.0/n), sigmas)
	}
	// std = 0 gives the mean; and NormalScaled(0, 1) is Normal.
	for _, v := range NormalScaled(Key(1), Float64, 4, 0, 10).Float64s() {
		if v != 4 {
			t.Fatalf("NormalScaled with std 0 gave %v", v)
		}
	}
	if !equalBits(NormalScaled(Key(3), Float64, 0, 1, 50), Normal(Key(3), Float64, 50)) {
		t.Errorf("NormalScaled(0, 1) differs from Normal")
	}
}

// refRandInt is lo + floor(R·(hi-lo)/2^64) in Go's 128-bit arithmetic.
func refRandInt(k0, k1 uint32, i uint64, lo, hi int64) int64 {
	y0, y1 := refBlock(k0, k1, i)
	r := uint64(y0)<<32 | uint64(y1)
	h, _ := bits.Mul64(r, uint64(hi)-uint64(lo))
	return lo + int64(h)
}

func TestRandIntMatchesReference(t *testing.T) {
	key := FoldIn(Key(77), 3)
	k0, k1 := keyOf(t, key)
	ranges := [][2]int64{
		{0, 1}, {-5, 5}, {0, 10}, {7, 1 << 16}, {0, 1<<16 + 1}, {-3, 1 << 31}, {0, 1 << 32},
		{1, 1<<40 + 12345}, {-(1 << 62), 1 << 62}, {math.MinInt64, math.MaxInt64},
		{math.MinInt64, 0}, {0, math.MaxInt64}, {math.MaxInt64 - 3, math.MaxInt64},
	}
	for _, r := range ranges {
		got := RandInt(key, r[0], r[1], 500).Int64s()
		for i, v := range got {
			want := refRandInt(k0, k1, uint64(i), r[0], r[1])
			if v != want {
				t.Fatalf("RandInt(%d, %d)[%d] = %d; want %d", r[0], r[1], i, v, want)
			}
			if v < r[0] || v >= r[1] {
				t.Fatalf("RandInt(%d, %d) gave %d", r[0], r[1], v)
			}
		}
	}
	if s := RandInt(key, 0, 5, 2, 3); s.DType() != Int64 || !slices.Equal(s.Shape(), []int{2, 3}) {
		t.Errorf("RandInt gave %s", s.TypeString())
	}
}

func TestRandIntStatistics(t *testing.T) {
	const n = 100000
	const lo, hi = -3, 7
	x := RandInt(Key(13), lo, hi, n).Int64s()
	var counts [hi - lo]float64
	xs := make([]float64, n)
	for i, v := range x {
		if v < lo || v >= hi {
			t.Fatalf("RandInt gave %d outside [%d, %d)", v, lo, hi)
		}
		counts[v-lo]++
		xs[i] = float64(v)
	}
	// Chi-square with 9 degrees of freedom: mean 9, standard deviation
	// sqrt(18); reject beyond 5 of those (p ≈ 4·10⁻⁴ by the exact tail).
	e := float64(n) / (hi - lo)
	var chi2 float64
	for _, c := range counts {
		chi2 += (c - e) * (c - e) / e
	}
	if chi2 > 9+sigmas*math.Sqrt(18) {
		t.Errorf("RandInt chi-square over 10 bins = %.2f; counts %v", chi2, counts)
	}
	m := float64(hi - lo)
	mean, _, _, _ := moments(xs)
	v := (m*m - 1) / 12
	within(t, "RandInt mean", mean, (lo+hi-1)/2.0, math.Sqrt(v/n), sigmas)
	// A wide range: the mean of [0, 2^40) scaled to [0, 1).
	big := RandInt(Key(14), 0, 1<<40, n).Int64s()
	for i, b := range big {
		xs[i] = float64(b) / (1 << 40)
	}
	mean, variance, _, _ := moments(xs)
	within(t, "RandInt [0, 2^40) mean", mean, 0.5, math.Sqrt(1.0/12/n), sigmas)
	within(t, "RandInt [0, 2^40) variance", variance, 1.0/12, math.Sqrt((1.0/80-1.0/144)/n), sigmas)
}

func isPermutation(p []int64, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, v := range p {
		if v < 0 || v >= int64(n) || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

func TestPermutationIsPermutation(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 5, 8, 13, 100, 1000, 4097} {
		for s := int64(0); s < 3; s++ {
			p := Permutation(Key(s), n)
			if p.DType() != Int64 || !slices.Equal(p.Shape(), []int{n}) {
				t.Fatalf("Permutation(_, %d) is %s", n, p.TypeString())
			}
			if !isPermutation(p.Int64s(), n) {
				t.Fatalf("Permutation(_, %d) = %v is not a permutation", n, p.Int64s())
			}
		}
	}
}

func TestPermutationUniform(t *testing.T) {
	// Each position's value over many keys: counts[pos][val] ~ Binomial(m,
	// 1/n), within 5 standard deviations; and all n! orders of n = 3
	// appear about equally (each within 5 standard deviations).
	const n, m = 5, 3000
	var counts [n][n]float64
	orders := map[[3]int64]float64{}
	base := Key(2025)
	for i := 0; i < m; i++ {
		k := FoldIn(base, int64(i))
		p := Permutation(k, n).Int64s()
		for pos, v := range p {
			counts[pos][v]++
		}
		q := Permutation(k, 3).Int64s()
		orders[[3]int64{q[0], q[1], q[2]}]++
	}
	e, sd := float64(m)/n, math.Sqrt(float64(m)*(1.0/n)*(1-1.0/n))
	for pos := range counts {
		for v, c := range counts[pos] {
			if math.Abs(c-e) > sigmas*sd {
				t.Errorf("position %d holds %d in %v of %d permutations; want %v ± %.1f", pos, v, c, m, e, sigmas*sd)
			}
		}
	}
	if len(orders) != 6 {
		t.Fatalf("Permutation of 3 gave %d distinct orders; want 6", len(orders))
	}
	e3, sd3 := float64(m)/6, math.Sqrt(float64(m)*(1.0/6)*(5.0/6))
	for o, c := range orders {
		if math.Abs(c-e3) > sigmas*sd3 {
			t.Errorf("order %v appears %v times; want %v ± %.1f", o, c, e3, sigmas*sd3)
		}
	}
}

func TestShuffle(t *testing.T) {
	x := Arange(Float64, 0, 24, 1)
	x = Reshape(x, 4, 6)
	key := Key(8)
	got := Shuffle(key, x, -1)
	want := Take(x, Permutation(key, 6), 1)
	if !equalBits(got, want) {
		t.Errorf("Shuffle along -1 = %v; want %v", got, want)
	}
	got0 := Shuffle(key, x, 0)
	if !equalBits(got0, Take(x, Permutation(key, 4), 0)) {
		t.Errorf("Shuffle along 0 differs from Take of Permutation")
	}
	// Rows are kept whole.
	v := got0.Float64s()
	for r := 0; r < 4; r++ {
		for c := 1; c < 6; c++ {
			if v[6*r+c] != v[6*r]+float64(c) {
				t.Fatalf("Shuffle along 0 broke a row: %v", v)
			}
		}
	}
}

func softmax64(l []float64) []float64 {
	p := make([]float64, len(l))
	var s float64
	for i, v := range l {
		p[i] = math.Exp(v)
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// checkFrequencies checks that the counts of the values 0…len(p)-1 in x
// match p within 5 binomial standard errors.
func checkFrequencies(t *testing.T, what string, x []int64, p []float64) {
	t.Helper()
	c := make([]float64, len(p))
	for _, v := range x {
		if v < 0 || int(v) >= len(p) {
			t.Fatalf("%s gave index %d outside [0, %d)", what, v, len(p))
		}
		c[v]++
	}
	n := float64(len(x))
	for i, pi := range p {
		if pi == 0 {
			if c[i] != 0 {
				t.Errorf("%s drew index %d of probability 0 %v times", what, i, c[i])
			}
			continue
		}
		within(t, what+" frequency", c[i]/n, pi, math.Sqrt(pi*(1-pi)/n), sigmas)
	}
}

func TestCategoricalFrequencies(t *testing.T) {
	const n = 100000
	l := []float64{0.5, -1, 2, 0, 1}
	p := softmax64(l)
	for _, dt := range []DType{Float32, Float64} {
		logits := AsType(FromFloat64s(l), dt)
		s := Categorical(Key(21), logits, 0, n)
		if s.DType() != Int64 || !slices.Equal(s.Shape(), []int{n}) {
			t.Fatalf("Categorical gave %s", s.TypeString())
		}
		checkFrequencies(t, "Categorical "+dt.String(), s.Int64s(), p)
	}
	// A batch of distributions along axis 0 of [5, 2] logits: column 1
	// has a -Inf logit, which is never drawn.
	l2 := []float64{0.5, 0, -1, math.Inf(-1), 2, 1, 0, 1, 1, 0}
	logits := FromFloat64s(l2, 5, 2)
	if s := Categorical(Key(1), logits, 0); !slices.Equal(s.Shape(), []int{2}) {
		t.Fatalf("Categorical with no shape gave %s; want [2]", s.TypeString())
	}
	s := Categorical(Key(22), logits, 0, n/2, 2).Int64s()
	for col := 0; col < 2; col++ {
		lc := make([]float64, 5)
		for r := range lc {
			lc[r] = l2[2*r+col]
		}
		xs := make([]int64, 0, n/2)
		for i := col; i < len(s); i += 2 {
			xs = append(xs, s[i])
		}
		checkFrequencies(t, "Categorical batch", xs, softmax64(lc))
	}
	// axis -1 of the transpose gives the same distributions.
	s2 := Categorical(Key(23), Transpose(logits), -1, n/2, 2).Int64s()
	xs := make([]int64, 0, n/2)
	for i := 1; i < len(s2); i += 2 {
		xs = append(xs, s2[i])
	}
	checkFrequencies(t, "Categorical axis -1", xs, softmax64([]float64{0, math.Inf(-1), 1, 1, 0}))
}

func TestChoice(t *testing.T) {
	const n = 100000
	p := []float64{0.1, 0, 0.6, 0.3}
	s := Choice(Key(31), 4, FromFloat64s(p), n)
	checkFrequencies(t, "Choice", s.Int64s(), p)
	// Unnormalized weights give the same distribution.
	w := FromFloat32s([]float32{1, 0, 6, 3})
	checkFrequencies(t, "Choice weights", Choice(Key(32), 4, w, n).Int64s(), p)
	if !slices.Equal(Choice(Key(33), 7, nil, 50).Int64s(), RandInt(Key(33), 0, 7, 50).Int64s()) {
		t.Errorf("Choice without p differs from RandInt")
	}
	if c := Choice(Key(34), 4, FromFloat64s(p)); c.Rank() != 0 {
		t.Errorf("Choice with no shape gave %s; want a scalar", c.TypeString())
	}
}

// refQuantile is Φ⁻¹(p) by Newton's method on log Φ(x) = log p, with
// Φ(x) = erfc(-x/√2)/2 (accurate in the lower tail) and the symmetry
// Φ⁻¹(p) = -Φ⁻¹(1-p) (1-p is exact for p ≥ 1/2). math.Erfcinv is not a
// usable oracle: it is Erfinv(1-x), which loses the tail.
func refQuantile(p float64) float64 {
	if p > 0.5 {
		return -refQuantile(1 - p)
	}
	x := -math.Sqrt(-2 * math.Log(p))
	if p > 1e-3 {
		x = -math.Sqrt2 * math.Erfcinv(2*p)
	}
	for i := 0; i < 100; i++ {
		c := 0.5 * math.Erfc(-x/math.Sqrt2)
		d := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		step := (math.Log(c) - math.Log(p)) * c / d
		x -= step
		if math.Abs(step) < 1e-16*math.Abs(x) {
			break
		}
	}
	return x
}

func TestNormalQuantileAccuracy(t *testing.T) {
	var ps []float64
	for e := -300.0; e < -1; e += 0.5 {
		ps = append(ps, math.Pow(10, e))
	}
	for p := 0.001; p < 1; p += 0.001 {
		ps = append(ps, p)
	}
	ps = append(ps, 0.02425, 0.97575, 1-1e-10, 1-0x1p-53)
	got := rngNormalQuantile(FromFloat64s(ps)).Float64s()
	for i, p := range ps {
		want := refQuantile(p)
		if d := math.Abs(got[i] - want); d > 1.2e-9*math.Abs(want)+1e-15 {
			t.Errorf("quantile(%v) = %v; want %v (relative error %.3g)", p, got[i], want, d/math.Abs(want))
		}
	}
}

// truncMoments returns the mean and variance of the standard normal
// truncated to [a, b].
func truncMoments(a, b float64) (mean, variance float64) {
	phi := func(x float64) float64 {
		if math.IsInf(x, 0) {
			return 0
		}
		return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
	}
	xphi := func(x float64) float64 {
		if math.IsInf(x, 0) {
			return 0
		}
		return x * phi(x)
	}
	var z float64
	if a > 0 {
		z = 0.5 * (math.Erfc(a/math.Sqrt2) - math.Erfc(b/math.Sqrt2))
	} else {
		z = 0.5 * (math.Erfc(-b/math.Sqrt2) - math.Erfc(-a/math.Sqrt2))
	}
	mean = (phi(a) - phi(b)) / z
	variance = 1 + (xphi(a)-xphi(b))/z - mean*mean
	return mean, variance
}

func TestTruncatedNormal(t *testing.T) {
	const n = 100000
	inf := math.Inf(1)
	for _, iv := range [][2]float64{{-1, 2}, {0.5, 3}, {2, inf}, {-inf, -3}, {-inf, inf}, {5, 6}, {-0.1, 0.1}, {8, 8.5}} {
		lo, hi := iv[0], iv[1]
		mu, v := truncMoments(lo, hi)
		for _, dt := range []DType{Float32, Float64} {
			x := asFloat64s(TruncatedNormal(Key(41), dt, lo, hi, n))
			for _, s := range x {
				if !(s >= lo && s <= hi) {
					t.Fatalf("TruncatedNormal(%v, %v) %v gave %v", lo, hi, dt, s)
				}
			}
			mean, variance, _, _ := moments(x)
			what := "TruncatedNormal [" + dt.String() + "] mean"
			within(t, what, mean, mu, math.Sqrt(v/n), sigmas)
			if dt == Float64 {
				within(t, "TruncatedNormal variance", variance, v, v*math.Sqrt(3.0/n), sigmas)
			}
		}
	}
	// Bounds that float32 cannot represent: every value still lies inside.
	lo, hi := 0.1, 0.3
	for _, s := range TruncatedNormal(Key(42), Float32, lo, hi, 1000).Float32s() {
		if !(float64(s) >= lo && float64(s) <= hi) {
			t.Fatalf("TruncatedNormal f32 gave %v outside [0.1, 0.3]", s)
		}
	}
}

func TestMoreRandomErrors(t *testing.T) {
	good := Key(0)
	l := FromFloat64s([]float64{0, 1, 2})
	cases := []rngErrCase{
		{"SplitKeys nil key", "peel.SplitKeys", func() { SplitKeys(nil, 2) }},
		{"SplitKeys bad key", "peel.SplitKeys", func() { SplitKeys(FromInt64s([]int64{1, 2, 3}), 2) }},
		{"SplitKeys negative", "peel.SplitKeys", func() { SplitKeys(good, -1) }},
		{"UniformRange bad key", "peel.UniformRange", func() { UniformRange(FromFloat64s([]float64{0, 1}), Float64, 0, 1, 2) }},
		{"UniformRange int dtype", "peel.UniformRange", func() { UniformRange(good, Int64, 0, 1, 2) }},
		{"UniformRange negative dim", "peel.UniformRange", func() { UniformRange(good, Float64, 0, 1, -2) }},
		{"UniformRange lo = hi", "peel.UniformRange", func() { UniformRange(good, Float64, 1, 1, 2) }},
		{"UniformRange lo > hi", "peel.UniformRange", func() { UniformRange(good, Float64, 2, 1, 2) }},
		{"UniformRange NaN", "peel.UniformRange", func() { UniformRange(good, Float64, math.NaN(), 1, 2) }},
		{"UniformRange inf", "peel.UniformRange", func() { UniformRange(good, Float64, 0, math.Inf(1), 2) }},
		{"UniformRange too wide", "peel.UniformRange", func() { UniformRange(good, Float64, -math.MaxFloat64, math.MaxFloat64, 2) }},
		{"UniformRange too wide f32", "peel.UniformRange", func() { UniformRange(good, Float32, -1e38, 1e39, 2) }},
		{"UniformRange no f32 value", "peel.UniformRange", func() { UniformRange(good, Float32, 1+1e-9, 1+2e-9, 2) }},
		{"UniformRange too large", "peel.UniformRange", func() { UniformRange(good, Float64, 0, 1, math.MaxInt, 2) }},
		{"NormalScaled bool dtype", "peel.NormalScaled", func() { NormalScaled(good, Bool, 0, 1, 2) }},
		{"NormalScaled negative std", "peel.NormalScaled", func() { NormalScaled(good, Float64, 0, -1, 2) }},
		{"NormalScaled NaN mean", "peel.NormalScaled", func() { NormalScaled(good, Float64, math.NaN(), 1, 2) }},
		{"NormalScaled negative dim", "peel.NormalScaled", func() { NormalScaled(good, Float64, 0, 1, -1) }},
		{"RandInt hi = lo", "peel.RandInt", func() { RandInt(good, 3, 3, 2) }},
		{"RandInt hi < lo", "peel.RandInt", func() { RandInt(good, 3, -3, 2) }},
		{"RandInt nil key", "peel.RandInt", func() { RandInt(nil, 0, 3, 2) }},
		{"RandInt negative dim", "peel.RandInt", func() { RandInt(good, 0, 3, -2) }},
		{"RandInt too large", "peel.RandInt", func() { RandInt(good, 0, 3, math.MaxInt/4, 8) }},
		{"Permutation negative", "peel.Permutation", func() { Permutation(good, -1) }},
		{"Permutation batch of keys", "peel.Permutation", func() { Permutation(SplitKeysStacked(good, 2), 3) }},
		{"Shuffle nil x", "peel.Shuffle", func() { Shuffle(good, nil, 0) }},
		{"Shuffle bad axis", "peel.Shuffle", func() { Shuffle(good, l, 1) }},
		{"Shuffle bad key", "peel.Shuffle", func() { Shuffle(l, l, 0) }},
		{"Categorical nil logits", "peel.Categorical", func() { Categorical(good, nil, 0) }},
		{"Categorical int logits", "peel.Categorical", func() { Categorical(good, FromInt64s([]int64{1, 2}), 0) }},
		{"Categorical bad axis", "peel.Categorical", func() { Categorical(good, l, 2) }},
		{"Categorical empty axis", "peel.Categorical", func() { Categorical(good, FromFloat64s([]float64{}, 2, 0), 1) }},
		{"Categorical short shape", "peel.Categorical", func() { Categorical(good, FromFloat64s(make([]float64, 24), 2, 3, 4), 1, 4) }},
		{"Categorical shape mismatch", "peel.Categorical", func() { Categorical(good, FromFloat64s(make([]float64, 6), 2, 3), 1, 4, 3) }},
		{"Categorical negative dim", "peel.Categorical", func() { Categorical(good, l, 0, -1) }},
		{"Choice n = 0", "peel.Choice", func() { Choice(good, 0, nil, 2) }},
		{"Choice wrong p length", "peel.Choice", func() { Choice(good, 4, l, 2) }},
		{"Choice int p", "peel.Choice", func() { Choice(good, 2, FromInt64s([]int64{1, 2}), 2) }},
		{"Choice negative dim", "peel.Choice", func() { Choice(good, 3, l, -2) }},
		{"TruncatedNormal lo = hi", "peel.TruncatedNormal", func() { TruncatedNormal(good, Float64, 1, 1, 2) }},
		{"TruncatedNormal NaN", "peel.TruncatedNormal", func() { TruncatedNormal(good, Float64, math.NaN(), 1, 2) }},
		{"TruncatedNormal int dtype", "peel.TruncatedNormal", func() { TruncatedNormal(good, Int64, 0, 1, 2) }},
		{"TruncatedNormal negative dim", "peel.TruncatedNormal", func() { TruncatedNormal(good, Float64, 0, 1, -2) }},
		{"TruncatedNormal no f32 value", "peel.TruncatedNormal", func() { TruncatedNormal(good, Float32, 1+1e-9, 1+2e-9, 2) }},
	}
	checkRngErrors(t, cases)
}
