package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// budgetBlock is a block of two layers with cheap activations between
// them: matrix products to save or recompute, and elementwise values the
// backward pass reads.
func budgetBlock(w1, w2 *T) func(x *T) *T {
	return func(x *T) *T {
		h := peel.Tanh(peel.MatMul(x, w1))
		g := peel.Mul(peel.Sin(h), h)
		return peel.Exp(peel.MatMul(g, w2))
	}
}

// TestMemoryBudget checks the policy at budgets from nothing to
// everything against the un-checkpointed gradient (equal: recomputed
// values are computed as the first time) and against its own plan: the
// bytes saved never pass the budget, a zero budget is NothingSaveable's
// plan, a budget holding what EverythingSaveable saves recomputes
// nothing, and the recomputation never grows with the budget.
func TestMemoryBudget(t *testing.T) {
	w1 := peel.Normal(peel.Key(1), peel.Float64, 8, 16)
	w2 := peel.Normal(peel.Key(2), peel.Float64, 16, 8)
	x := peel.Normal(peel.Key(3), peel.Float64, 4, 8)
	block := budgetBlock(w1, w2)
	loss := func(policy transforms.SavePolicy) func(*T) *T {
		ck := transforms.Checkpoint(block, policy)
		return func(x *T) *T { return peel.Sum(ck(peel.Mul(x, 0.5))) }
	}
	want := transforms.Grad(func(x *T) *T { return peel.Sum(block(peel.Mul(x, 0.5))) })(x).Float64s()
	all := transforms.RematPlan(loss(transforms.EverythingSaveable), x).SavedBytes
	none := transforms.RematPlan(loss(transforms.NothingSaveable), x)
	if all <= 0 || none.RecomputedFLOPs <= 0 {
		t.Fatalf("EverythingSaveable saves %d bytes, NothingSaveable recomputes %+v", all, none)
	}
	prev := none.RecomputedFLOPs + 1
	for _, frac := range []float64{0, 0.1, 0.25, 0.5, 0.75, 1, 2} {
		budget := int64(frac * float64(all))
		f := loss(transforms.MemoryBudget(budget))
		near(t, "gradient", transforms.Grad(f)(x).Float64s(), want, 0)
		near(t, "compiled gradient", transforms.Compile(transforms.Grad(f))(x).Float64s(), want, 1e-12)
		st := transforms.RematPlan(f, x)
		if st.SavedBytes > budget {
			t.Errorf("budget %d: saved %d bytes", budget, st.SavedBytes)
		}
		if st.RecomputedFLOPs > prev {
			t.Errorf("budget %d: recomputes %d FLOPs, more than the smaller budget's %d", budget, st.RecomputedFLOPs, prev)
		}
		prev = st.RecomputedFLOPs
		switch {
		case budget == 0 && st != none:
			t.Errorf("a zero budget: %+v, NothingSaveable %+v", st, none)
		case budget >= all && st.Recomputed != 0:
			t.Errorf("budget %d ≥ EverythingSaveable's %d: recomputes %+v", budget, all, st)
		}
	}
}

// TestMemoryBudgetSpendsOnProducts: with room for one of the block's
// [4,16] values, the policy saves one from which the backward pass
// recomputes no matrix product (the product's result, or a value the
// backward pass reads computed from it), where NothingSaveable
// recomputes the first product.
func TestMemoryBudgetSpendsOnProducts(t *testing.T) {
	w1 := peel.Normal(peel.Key(1), peel.Float64, 8, 16)
	w2 := peel.Normal(peel.Key(2), peel.Float64, 16, 8)
	x := peel.Normal(peel.Key(3), peel.Float64, 4, 8)
	block := func(x *T) *T {
		h := peel.Tanh(peel.MatMul(x, w1))
		return peel.MatMul(peel.Mul(peel.Sin(h), h), w2)
	}
	dots := func(policy transforms.SavePolicy) (int, transforms.RematStats) {
		ck := transforms.Checkpoint(block, policy)
		f := func(x *T) *T { return peel.Sum(ck(x)) }
		n := 0
		for _, p := range transforms.Recomputed(f, x) {
			if p == "dot_general" {
				n++
			}
		}
		return n, transforms.RematPlan(f, x)
	}
	if n, _ := dots(transforms.NothingSaveable); n == 0 {
		t.Fatalf("NothingSaveable recomputes no matrix product")
	}
	n, st := dots(transforms.MemoryBudget(4 * 16 * 8))
	if n != 0 || st.SavedBytes > 4*16*8 || st.SavedBytes == 0 {
		t.Fatalf("with room for one f64[4,16]: %d matrix products recomputed, %+v", n, st)
	}
	wantError(t, func() { transforms.MemoryBudget(-1) }, "negative")
}

// TestMemoryBudgetExported: a program with a budgeted checkpoint
// exports, loads and differentiates the same.
func TestMemoryBudgetExported(t *testing.T) {
	w1 := peel.Normal(peel.Key(1), peel.Float64, 8, 16)
	w2 := peel.Normal(peel.Key(2), peel.Float64, 16, 8)
	x := peel.Normal(peel.Key(3), peel.Float64, 4, 8)
	f := func(x *T) *T {
		return peel.Sum(transforms.Checkpoint(budgetBlock(w1, w2), transforms.MemoryBudget(512))(x))
	}
	e := reload(t, transforms.Export(f, x))
	g := transforms.Grad(func(x *T) *T { return e.Call(x)[0] })(x)
	near(t, "gradient of the loaded program", g.Float64s(), transforms.Grad(f)(x).Float64s(), 1e-12)
}

// TestMemoryBudgetLongChain: a checkpoint too large for the greedy step
// (a chain of 160 layers) takes values by their own arithmetic per
// byte, within the budget, with the same gradient.
func TestMemoryBudgetLongChain(t *testing.T) {
	w := peel.Mul(peel.Normal(peel.Key(1), peel.Float64, 4, 4), 0.5)
	chain := func(x *T) *T {
		for range 160 {
			x = peel.Tanh(peel.MatMul(x, w))
		}
		return x
	}
	x := peel.Normal(peel.Key(3), peel.Float64, 2, 4)
	want := transforms.Grad(func(x *T) *T { return peel.Sum(chain(x)) })(x).Float64s()
	const budget = 40 * 2 * 4 * 8 // forty of the chain's values
	f := func(x *T) *T { return peel.Sum(transforms.Checkpoint(chain, transforms.MemoryBudget(budget))(x)) }
	near(t, "gradient", transforms.Grad(f)(x).Float64s(), want, 0)
	if st := transforms.RematPlan(f, x); st.SavedBytes > budget || st.SavedBytes == 0 {
		t.Fatalf("budget %d: %+v", budget, st)
	}
}

// TestRematPlanInspector: a compiled gradient's Inspector reports the
// plan of the checkpoints traced in it, RematPlan's for the eager
// function.
func TestRematPlanInspector(t *testing.T) {
	w1 := peel.Normal(peel.Key(1), peel.Float64, 8, 16)
	w2 := peel.Normal(peel.Key(2), peel.Float64, 16, 8)
	x := peel.Normal(peel.Key(3), peel.Float64, 4, 8)
	ck := transforms.Checkpoint(budgetBlock(w1, w2), transforms.MemoryBudget(600))
	f := func(x *T) *T { return peel.Sum(ck(x)) }
	var ins transforms.Inspector
	g := transforms.Compile(transforms.Grad(f), transforms.Inspect(&ins))
	near(t, "compiled gradient", g(x).Float64s(), transforms.Grad(f)(x).Float64s(), 1e-12)
	got, want := ins.Stats().Remat, transforms.RematPlan(f, x)
	if got != want || want.Recomputed == 0 || want.SavedBytes == 0 {
		t.Fatalf("the Inspector's plan %+v, RematPlan's %+v", got, want)
	}
}
