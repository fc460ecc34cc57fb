package transforms_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// branchy doubles x when its sum is positive and negates it otherwise,
// then iterates x ← x/2 while its largest magnitude exceeds 1: Go
// control flow on data.
func branchy(x *T) *T {
	if peel.Sum(x).Item() > 0 {
		x = peel.Mul(x, 2.0)
	} else {
		x = peel.Neg(x)
	}
	for peel.Max(peel.Abs(x)).Item() > 1 {
		x = peel.Div(x, 2.0)
	}
	return peel.Add(peel.Tanh(x), 1.0)
}

func TestGraphBreaks(t *testing.T) {
	var cIns transforms.Inspector
	c := transforms.Compile(branchy, transforms.Inspect(&cIns))
	for _, v := range [][]float64{{1, 2, 3}, {-1, -2, -3}, {0.1, 0.2, -0.1}, {5, 6, 7}, {1, 2, 3}} {
		x := f64(v...)
		near(t, "compiled", c(x).Float64s(), branchy(x).Float64s(), 0)
	}
	st := cIns.Stats()
	if len(st.GraphBreaks) == 0 || !strings.Contains(st.GraphBreaks[0], "Item") || !strings.Contains(st.GraphBreaks[0], "breaks_test.go") {
		t.Errorf("GraphBreaks %q: want the Item read and this file's line", st.GraphBreaks)
	}
	if st.Misses != 1 {
		t.Errorf("%d misses, want 1 (one signature)", st.Misses)
	}
	ex := cIns.Explain(f64(1, 2, 3))
	if !strings.Contains(ex, "break 1:") || !strings.Contains(ex, "segments compiled") {
		t.Errorf("Explain does not list the breaks:\n%s", ex)
	}
	// Strict: the read is an error.
	wantError(t, func() { transforms.Compile(branchy, transforms.Strict())(f64(1, 2)) }, "cannot read")
	// In place: an error in segments.
	wantError(t, func() {
		transforms.Compile(func(x *T) *T {
			y := peel.Mul(x, 1.0)
			if peel.Sum(y).Item() > 0 {
				peel.AddInPlace(y, 1.0)
			}
			return y
		})(f64(1, 2))
	}, "in-place")
}

// TestGraphBreakInBackward checks a hook running Go code on the
// cotangent (logging it) inside Compile(Grad): the backward pass breaks
// there, and results and order are the eager ones.
func TestGraphBreakInBackward(t *testing.T) {
	var log []string
	var seen [][]float64
	loss := func(x *T) *T {
		h := transforms.Hook(peel.Sin(x), func(ct *T) *T {
			log = append(log, "h")
			seen = append(seen, ct.Float64s())
			return peel.Mul(ct, 2.0)
		})
		g := transforms.Hook(peel.Mul(h, h), func(ct *T) *T { log = append(log, "g"); return nil })
		return peel.Sum(g)
	}
	x := f64(0.5, -1, 2)
	want := transforms.Grad(loss)(x)
	wantLog, wantSeen := log, seen
	log, seen = nil, nil
	var cIns transforms.Inspector
	c := transforms.Compile(transforms.Grad(loss), transforms.Inspect(&cIns))
	for call := range 3 {
		log, seen = nil, nil
		near(t, "Compile(Grad) with a logging hook", c(x).Float64s(), want.Float64s(), 1e-15)
		if call == 0 {
			// The first call's trace ran the function up to the break
			// before it ran in segments (see Compile).
			continue
		}
		if !slices.Equal(log, wantLog) {
			t.Errorf("call %d: hooks ran %v compiled, %v eagerly", call, log, wantLog)
		}
		near(t, "the hook's cotangent", seen[0], wantSeen[0], 1e-15)
	}
	if len(cIns.Stats().GraphBreaks) == 0 {
		t.Error("no graph break recorded for the logging hook")
	}
}

// TestGraphBreaksConcurrent runs a compiled function with breaks from
// many goroutines (run with -race).
func TestGraphBreaksConcurrent(t *testing.T) {
	c := transforms.Compile(branchy)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 20 {
				v := float64(g*20+k)/50 - 1.5
				x := f64(v, 2*v, -v)
				got, want := c(x).Float64s(), branchy(x).Float64s()
				for i := range got {
					if got[i] != want[i] {
						t.Errorf("goroutine %d call %d: %v, want %v", g, k, got, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestOpaque checks a function marked opaque inside Compile: it runs on
// concrete values every call, between compiled segments.
func TestOpaque(t *testing.T) {
	calls := 0
	host := transforms.Opaque(func(x *T) *T {
		calls++
		v := x.Float64s()
		for i := range v {
			v[i] = float64(int(v[i]*10)) / 10 // something peel does not trace
		}
		return peel.FromFloat64s(v, x.Shape()...)
	})
	f := func(x *T) *T { return peel.Exp(host(peel.Mul(x, 3.0))) }
	var cIns transforms.Inspector
	c := transforms.Compile(f, transforms.Inspect(&cIns))
	for _, v := range [][]float64{{0.11, 0.27}, {0.5, -0.33}, {0.11, 0.27}} {
		x := f64(v...)
		near(t, "opaque", c(x).Float64s(), f(x).Float64s(), 0)
	}
	if calls != 3*2 {
		t.Errorf("the opaque function ran %d times, want 6 (each call and each eager check; the first trace stops before it)", calls)
	}
	if bs := cIns.Stats().GraphBreaks; len(bs) == 0 || !strings.Contains(bs[0], "opaque") {
		t.Errorf("GraphBreaks %q", bs)
	}
	wantError(t, func() { transforms.Grad(func(x *T) *T { return peel.Sum(host(x)) })(f64(1)) }, "cannot read")
}
