package transforms_test

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestArgnumsNegative is the regression test of issue 25 item 13:
// Argnums(-1) was refused; a negative index counts from the end, as in
// JAX and torch.func, in every form that takes Argnums (GradArgs2/3,
// ValueAndGradArgs2/3, JacrevArgs2/3, JacfwdArgs2/3) and in Compile's
// StaticArgnums and Donate. Each selection is checked against Grad or
// Jacrev of a closure over the other arguments (float64, 1e-14), and
// an index out of range after normalization, or one given twice, is a
// *peel.Error.
func TestArgnumsNegative(t *testing.T) {
	a := peel.FromFloat64s([]float64{0.5, -1, 2})
	b := peel.FromFloat64s([]float64{1.5, 0.25, -2})
	c := peel.FromFloat64s([]float64{-0.5, 0.75, 1})
	vec3 := func(a, b, c *T) *T { return peel.Mul(peel.Mul(peel.Sin(a), peel.Square(b)), peel.Exp(c)) }
	f3 := func(a, b, c *T) *T { return peel.Sum(vec3(a, b, c)) }
	f2 := func(a, b *T) *T { return f3(a, b, c) }
	vec2 := func(a, b *T) *T { return vec3(a, b, c) }
	args := []*T{a, b, c}
	// The oracles: the gradient and the Jacobian of the closure over
	// argument k.
	grad3 := func(k int) *T {
		return transforms.Grad(func(x *T) *T { in := append([]*T(nil), args...); in[k] = x; return f3(in[0], in[1], in[2]) })(args[k])
	}
	jac3 := func(k int) *T {
		return transforms.Jacrev(func(x *T) *T { in := append([]*T(nil), args...); in[k] = x; return vec3(in[0], in[1], in[2]) })(args[k])
	}
	check := func(t *testing.T, what string, got []*T, want []bool, oracle func(int) *T) {
		t.Helper()
		for k, g := range got {
			if !want[k] {
				if g != nil {
					t.Errorf("%s: argument %d is not selected but has a derivative", what, k)
				}
				continue
			}
			if g == nil {
				t.Errorf("%s: argument %d is selected but has no derivative", what, k)
				continue
			}
			near(t, fmt.Sprintf("%s argument %d", what, k), g.Float64s(), oracle(k).Float64s(), 1e-14)
		}
	}
	sel := func(n int, ks ...int) []bool {
		s := make([]bool, n)
		for _, k := range ks {
			s[k] = true
		}
		return s
	}
	cases := []struct {
		nums []int
		n    int
		want []bool // nil: an error
		err  string
	}{
		{[]int{-1}, 2, sel(2, 1), ""},
		{[]int{-2}, 2, sel(2, 0), ""},
		{[]int{-1, 0}, 2, sel(2, 0, 1), ""},
		{[]int{-1}, 3, sel(3, 2), ""},
		{[]int{-3, -1}, 3, sel(3, 0, 2), ""},
		{[]int{1, -3}, 3, sel(3, 0, 1), ""},
		{[]int{-3}, 2, nil, "index -3 is out of range for a function of 2 arguments"},
		{[]int{2}, 2, nil, "index 2 is out of range for a function of 2 arguments"},
		{[]int{-4}, 3, nil, "index -4 is out of range for a function of 3 arguments"},
		{[]int{0, -2}, 2, nil, "repeats argument 0 (given as 0 and -2)"},
		{[]int{-1, 2}, 3, nil, "repeats argument 2"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d args %v", tc.n, tc.nums), func(t *testing.T) {
			opt := transforms.Argnums(tc.nums...)
			var forms map[string]func() ([]*T, *T) // derivatives, value (nil: none)
			var jacs map[string]func() []*T
			if tc.n == 2 {
				forms = map[string]func() ([]*T, *T){
					"GradArgs2":         func() ([]*T, *T) { ga, gb := transforms.GradArgs2(f2, opt)(a, b); return []*T{ga, gb}, nil },
					"ValueAndGradArgs2": func() ([]*T, *T) { v, ga, gb := transforms.ValueAndGradArgs2(f2, opt)(a, b); return []*T{ga, gb}, v },
				}
				jacs = map[string]func() []*T{
					"JacrevArgs2": func() []*T { ja, jb := transforms.JacrevArgs2(vec2, opt)(a, b); return []*T{ja, jb} },
					"JacfwdArgs2": func() []*T { ja, jb := transforms.JacfwdArgs2(vec2, opt)(a, b); return []*T{ja, jb} },
				}
			} else {
				forms = map[string]func() ([]*T, *T){
					"GradArgs3": func() ([]*T, *T) { ga, gb, gc := transforms.GradArgs3(f3, opt)(a, b, c); return []*T{ga, gb, gc}, nil },
					"ValueAndGradArgs3": func() ([]*T, *T) {
						v, ga, gb, gc := transforms.ValueAndGradArgs3(f3, opt)(a, b, c)
						return []*T{ga, gb, gc}, v
					},
				}
				jacs = map[string]func() []*T{
					"JacrevArgs3": func() []*T { ja, jb, jc := transforms.JacrevArgs3(vec3, opt)(a, b, c); return []*T{ja, jb, jc} },
					"JacfwdArgs3": func() []*T { ja, jb, jc := transforms.JacfwdArgs3(vec3, opt)(a, b, c); return []*T{ja, jb, jc} },
				}
			}
			for name, form := range forms {
				if tc.want == nil {
					wantError(t, func() { form() }, "transforms."+name, "Argnums", tc.err)
					continue
				}
				g, v := form()
				check(t, name, g, tc.want, grad3)
				if v != nil {
					near(t, name+" value", v.Float64s(), f3(a, b, c).Float64s(), 0)
				}
			}
			for name, jac := range jacs {
				if tc.want == nil {
					wantError(t, func() { jac() }, "transforms."+name, "Argnums", tc.err)
					continue
				}
				check(t, name, jac(), tc.want, jac3)
			}
		})
	}
	// Compile's argument options take the same indices.
	t.Run("Compile", func(t *testing.T) {
		traces := 0
		var csIns transforms.Inspector
		cs := transforms.Compile2(func(x, s *T) *T { traces++; return peel.Mul(x, s) }, transforms.StaticArgnums(-1), transforms.Inspect(&csIns))
		near(t, "s=2", cs(a, peel.Scalar(2.0)).Float64s(), peel.Mul(a, 2.0).Float64s(), 0)
		near(t, "s=3", cs(a, peel.Scalar(3.0)).Float64s(), peel.Mul(a, 3.0).Float64s(), 0)
		near(t, "s=3 again", cs(a, peel.Scalar(3.0)).Float64s(), peel.Mul(a, 3.0).Float64s(), 0)
		if traces != 2 {
			t.Errorf("StaticArgnums(-1): %d traces, want 2 (one per static value)", traces)
		}
		if m := csIns.Stats().LastMiss; m == "" {
			t.Errorf("StaticArgnums(-1): no miss reason")
		}
		cd := transforms.Compile2(func(x, y *T) *T { return peel.Add(x, y) }, transforms.Donate(-2))
		near(t, "Donate(-2)", cd(peel.Clone(a), b).Float64s(), peel.Add(a, b).Float64s(), 0)
		wantError(t, func() { transforms.Compile2(func(x, y *T) *T { return x }, transforms.StaticArgnums(-3)) }, "transforms.Compile2", "StaticArgnums index -3 is out of range")
		wantError(t, func() { transforms.Compile2(func(x, y *T) *T { return x }, transforms.Donate(1, -1)) }, "transforms.Compile2", "Donate repeats argument 1")
	})
}
