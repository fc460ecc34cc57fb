package optim

import (
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/treeimpl"
	"github.com/peel-ml/peel/tree"
)

// State is the state of a Transformation: a tree of tensors (see package
// tree), such as an AdamState, a ChainState of the states of a chain, or
// EmptyState. Init returns it and Update takes and returns it; it is a
// valid argument and result of every transform, so states can be stacked
// with tree.Stack, mapped over with Vmap, passed to a compiled function and
// differentiated through. Its step counters are int64 scalar tensors,
// never Go ints, so that a compiled step is traced once.
type State any

// A Transformation is a gradient transformation over parameter trees of
// type P (optax's GradientTransformation): Init returns the state for
// params, and Update maps the gradients (or the updates of the
// transformation before it in a Chain) and the state to updates and the
// next state. Both are pure functions of their tensors: they never write
// to an input, so Grad, Vmap and Compile go through them.
//
// params in Update is the current parameters, of the grads' structure;
// only the transformations that read them (AddDecayedWeights, and the
// optimizers that decay weights: AdamW, Lion) need it, the others ignore
// it (the zero P may be passed).
//
// Init and Update panic with *peel.Error naming the transformation
// ("optim.Adam") when the trees differ in structure, when the state is not
// one Init returned (of another type), or when an op on the leaves fails
// (shapes of grads and state that do not match).
type Transformation[P any] interface {
	Init(params P) State
	Update(grads P, state State, params P) (updates P, next State)
}

// New returns the Transformation of the functions init and update, which
// follow the contract of Transformation's methods; errors from them are
// annotated with name (such as "mylib.Scale").
func New[P any](name string, init func(params P) State, update func(grads P, state State, params P) (P, State)) Transformation[P] {
	if init == nil || update == nil {
		treeimpl.Errorf("optim.New", "init and update must not be nil")
	}
	return &transformation[P]{name: name, init: init, update: update}
}

type transformation[P any] struct {
	name   string
	init   func(P) State
	update func(P, State, P) (P, State)
}

func (t *transformation[P]) Init(params P) State {
	defer peel.Annotate(t.name)
	return t.init(params)
}

func (t *transformation[P]) Update(grads P, state State, params P) (P, State) {
	defer peel.Annotate(t.name)
	return t.update(grads, state, params)
}

// EmptyState is the state of a transformation that keeps none
// (ClipByGlobalNorm, Clip, AddDecayedWeights, a constant learning rate).
type EmptyState struct{}

// ChainState is the state of a Chain: the states of its transformations,
// in order.
type ChainState []State

// Chain returns the transformation that applies ts in order, each to the
// updates of the one before it (optax.chain): Chain(ClipByGlobalNorm(1),
// ScaleByAdam[P](), ScaleByLearningRate[P](1e-3)) is Adam on clipped
// gradients. Its state is a ChainState. Update panics with *peel.Error
// naming "optim.Chain" if the state is not a ChainState of len(ts)
// states, and as the transformations of ts do.
func Chain[P any](ts ...Transformation[P]) Transformation[P] {
	const op = "optim.Chain"
	for i, t := range ts {
		if t == nil {
			treeimpl.Errorf(op, "transformation %d is nil", i)
		}
	}
	ts = append([]Transformation[P](nil), ts...)
	return named(op,
		func(params P) State {
			s := make(ChainState, len(ts))
			for i, t := range ts {
				s[i] = t.Init(params)
			}
			return s
		},
		func(grads P, state State, params P) (P, State) {
			s := stateAs[ChainState](op, state)
			if len(s) != len(ts) {
				treeimpl.Errorf(op, "the state holds %d states, but the chain has %d transformations", len(s), len(ts))
			}
			next := make(ChainState, len(ts))
			for i, t := range ts {
				grads, next[i] = t.Update(grads, s[i], params)
			}
			return grads, next
		})
}

// ApplyUpdates returns params + updates leaf by leaf, each sum in its
// parameter's dtype (optax.apply_updates). It panics with *peel.Error
// naming "optim.ApplyUpdates" if the trees differ in structure or a pair
// of leaves does not broadcast to the parameter's shape.
func ApplyUpdates[P any](params, updates P) P {
	const op = "optim.ApplyUpdates"
	defer peel.Annotate(op)
	sameTree(op, "params", "updates", params, updates)
	return tree.Map2(func(p, u *peel.Tensor) *peel.Tensor {
		if !slices.Equal(p.Shape(), u.Shape()) {
			treeimpl.Errorf(op, "a parameter is %s but its update is %s", p.TypeString(), u.TypeString())
		}
		return peel.AsType(peel.Add(p, u), p.DType())
	}, params, updates)
}

// named is New for this package's transformations.
func named[P any](name string, init func(P) State, update func(P, State, P) (P, State)) Transformation[P] {
	return &transformation[P]{name: name, init: init, update: update}
}

// alias wraps t so that its errors also name op (the optimizer built of
// it).
func alias[P any](op string, t Transformation[P]) Transformation[P] {
	return named(op, t.Init, t.Update)
}

// stateAs returns state as an S, panicking with *peel.Error naming op if
// it is another type.
func stateAs[S any](op string, state State) S {
	s, ok := state.(S)
	if !ok {
		var want S
		treeimpl.Errorf(op, "the state is %s, not the %T that Init returns", describe(state), want)
	}
	return s
}

func describe(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("of type %T", v)
}

// sameTree panics with *peel.Error naming op if trees a and b (called
// what and other) differ in structure or are not valid trees.
func sameTree(op, what, other string, a, b any) {
	la, _ := treeimpl.Flatten(op, a)
	lb, _ := treeimpl.Flatten(op, b)
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		treeimpl.Errorf(op, "%s is %s but %s is %s", what, describe(a), other, describe(b))
	}
	if msg := treeimpl.StructureDiff(a, b); msg != "" {
		treeimpl.Errorf(op, "%s and %s differ in structure: %s", what, other, msg)
	}
	if len(la) != len(lb) {
		treeimpl.Errorf(op, "%s has %d leaves but %s has %d", what, len(la), other, len(lb))
	}
}

// checkMoment checks that m (called name: "the state's Mu", "params")
// has the structure and leaf shapes of grads.
func checkMoment(op, name string, grads, m any) {
	sameTree(op, "grads", name, grads, m)
	lg, def := treeimpl.Flatten(op, grads)
	lm := tree.Leaves(m)
	for i := range lg {
		if !slices.Equal(lg[i].Shape(), lm[i].Shape()) {
			treeimpl.Errorf(op, "%s of grads is %s but %s has %s", def.LeafName("the tree", i), lg[i].TypeString(), name, lm[i].TypeString())
		}
	}
}

// zeroCount is a step counter's initial value, an int64 scalar.
func zeroCount() *peel.Tensor { return peel.Zeros(peel.Int64) }

// checkCount panics with *peel.Error naming op if c is not an int64
// counter.
func checkCount(op string, c *peel.Tensor) {
	if c == nil {
		treeimpl.Errorf(op, "the state's Count is a nil tensor")
	}
	if c.DType() != peel.Int64 || c.Rank() != 0 {
		treeimpl.Errorf(op, "the state's Count must be an i64 scalar, not %s", c.TypeString())
	}
}

// checkFinite panics with *peel.Error naming op if hyperparameter v
// (called name) is NaN or infinite.
func checkFinite(op, name string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		treeimpl.Errorf(op, "%s is %v; it must be finite", name, v)
	}
}

// checkNonNeg panics with *peel.Error naming op unless v (called name)
// is finite and >= 0.
func checkNonNeg(op, name string, v float64) {
	if !(v >= 0) || math.IsInf(v, 0) {
		treeimpl.Errorf(op, "%s is %v; it must be finite and >= 0", name, v)
	}
}

// checkRange panics with *peel.Error naming op unless lo <= v < hi (or
// v <= hi when closed).
func checkRange(op, name string, v, lo, hi float64, closed bool) {
	ok := v >= lo && (v < hi || closed && v == hi)
	if !ok || math.IsNaN(v) {
		end := ")"
		if closed {
			end = "]"
		}
		treeimpl.Errorf(op, "%s is %v; it must be in [%v, %v%s", name, v, lo, hi, end)
	}
}
