package transforms

import (
	"github.com/peel-ml/peel"
)

// Options follow one style across peel: each transform family has an
// option interface with an unexported method, and constructors return
// values satisfying it. An option meaning the same thing to several
// families (ChunkSize, Argnums) is one value satisfying each interface,
// so passing an option to a transform that has no use for it does not
// compile.

// VmapOption configures Vmap, Vmap2 and Vmap3: InAxes, OutAxes,
// AxisSize and ChunkSize.
type VmapOption interface{ applyVmap(*vmapConfig) }

// JacobianOption configures the Jacobians and Hessians: ChunkSize, and
// Argnums for the *Args forms.
type JacobianOption interface{ applyJacobian(*jacobianConfig) }

// GradOption configures the gradient transforms: CompileBackward, Remat
// and OnGradient.
type GradOption interface{ applyGrad(*gradConfig) }

// GradArgsOption configures GradArgs2/3 and ValueAndGradArgs2/3:
// Argnums, and every GradOption.
type GradArgsOption interface{ applyGradArgs(*gradConfig) }

// FunctionalizeOption configures Functionalize: RemoveViews.
type FunctionalizeOption interface{ applyFunctionalize(*functionalizeConfig) }

// GraphOption configures MakeGraph: Decompose.
type GraphOption interface{ applyGraph(*graphConfig) }

type vmapConfig struct {
	inAxes   []any // one spec per positional argument (or one for all)
	inSet    bool
	outAxes  any
	outSet   bool
	axisSize int
	axisName string
	chunk    int
	chunkSet bool
}

type jacobianConfig struct {
	chunk      int
	chunkSet   bool
	argnums    []int
	argnumsSet bool
}

type gradConfig struct {
	argnums    []int
	argnumsSet bool
	// compileBackward runs the backward pass as a compiled program;
	// remat, when set, checkpoints the function with that policy.
	compileBackward bool
	remat           *SavePolicy
	rematPlans      *planCache // Remat's checkpoint plans, shared by the gradient's calls
	// onGrad are the OnGradient hooks, in order.
	onGrad []func(path string, g *peel.Tensor) *peel.Tensor
}

// BackwardOption is an option about a gradient's backward pass
// (CompileBackward, Remat, OnGradient): a GradOption and a
// GradArgsOption.
type BackwardOption struct{ apply func(*gradConfig) }

func (o BackwardOption) applyGrad(c *gradConfig)     { o.apply(c) }
func (o BackwardOption) applyGradArgs(c *gradConfig) { o.apply(c) }

func gradOpt(f func(*gradConfig)) BackwardOption { return BackwardOption{apply: f} }

// CompileBackward makes a gradient run its backward pass as a compiled
// program (package compiler: fusion, a planned arena, no dispatch),
// while the forward pass runs eagerly as before. The program is traced
// from the transposed linear graph once per structure of that graph
// (its equations, parameters and value types, never its values) and
// cached. Gradients under another transform, and linear graphs holding
// values in their equations (user-defined ops' rules, checkpoints,
// compiled calls), are transposed eagerly as without the option; the
// results are the same either way. By default the backward pass is
// transposed eagerly, primitive by primitive.
func CompileBackward() BackwardOption {
	return gradOpt(func(c *gradConfig) { c.compileBackward = true })
}

// Remat makes a gradient save only what policy allows of the values its
// function computes and recompute the rest in the backward pass: the
// gradient of Checkpoint(f, policy). Remat(MinCut) is AOTAutograd's
// choice; under Compile the recomputation is compiled with the rest.
// By default a gradient saves what linearize saves (under Compile,
// GradRemat's policy when given).
func Remat(policy SavePolicy) BackwardOption {
	return gradOpt(func(c *gradConfig) { p := policy; c.remat, c.rematPlans = &p, newPlanCache() })
}

// gradConfigOf applies opts.
func gradConfigOf(opts []GradOption) *gradConfig {
	c := &gradConfig{}
	for _, o := range opts {
		o.applyGrad(c)
	}
	return c
}

type functionalizeConfig struct{ removeViews bool }

type graphConfig struct{ decompose bool }

type vmapOpt func(*vmapConfig)

func (o vmapOpt) applyVmap(c *vmapConfig) { o(c) }

// InAxes sets which dimension of each argument is mapped: one spec per
// positional argument of the vmapped function (one for Vmap, two for
// Vmap2, three for Vmap3), or a single int or NoAxis for all of them.
// A spec is an int (in [-r, r) for a leaf of rank r; negative counts
// from the end) or NoAxis for every leaf of that argument, or a tree
// prefix of the argument — []any for slices and arrays, map[string]any
// for maps and for structs (by exported field name) — whose nodes are
// ints, NoAxis, nil (not mapped) or further prefixes. A prefix must
// match the tree exactly: one entry per element, key or exported field;
// a missing or unknown key or field is a *peel.Error naming its path.
// The default is 0 for every argument.
//
//	Vmap3(loss, InAxes(NoAxis, 0, 0))              // params shared, x and y mapped
//	Vmap(f, InAxes(map[string]any{"W": NoAxis, "X": 1}))
func InAxes(specs ...any) VmapOption {
	s := append([]any(nil), specs...)
	return vmapOpt(func(c *vmapConfig) { c.inAxes, c.inSet = s, true })
}

// OutAxes sets where the batch dimension goes in each result leaf, with
// InAxes's forms for the one result; an int is in [-r-1, r] for a
// result leaf of rank r per lane (negative counts from the end of the
// batched result). The default is 0. Results that do not depend on a
// mapped input are broadcast to the batch size there.
func OutAxes(spec any) VmapOption {
	return vmapOpt(func(c *vmapConfig) { c.outAxes, c.outSet = spec, true })
}

// AxisSize sets the batch size; it is required when no argument is
// mapped and must agree with the mapped arguments otherwise. By default
// the batch size is the mapped arguments' size along their axes.
func AxisSize(n int) VmapOption { return vmapOpt(func(c *vmapConfig) { c.axisSize = n }) }

// AxisName names the mapped axis (JAX's vmap(axis_name=name)): inside
// the function, collectives over the name (package dist: Psum, Pmean,
// AllGather, …) see the whole batch, and dist.AxisIndex(name) is each
// lane's index. Vmap(f, AxisName("i")) with dist.Psum(x, "i") inside
// sums x over the batch and gives every lane the sum. Names nest: an
// inner Vmap may bind another name, and a collective may name several
// (dist.Psum(x, "i", "j")); an inner binding of the same name shadows
// the outer. By default the axis has no name. It does not combine with
// ChunkSize smaller than the batch (the transform panics with
// *peel.Error: a collective must see every lane); name must not be "".
func AxisName(name string) VmapOption {
	if name == "" {
		treeErrorf("transforms.AxisName", "the axis name is empty")
	}
	return vmapOpt(func(c *vmapConfig) { c.axisName = name })
}

// ChunkOption is ChunkSize's option, for Vmap and for the Jacobians.
type ChunkOption struct{ n int }

// ChunkSize runs a batch (Vmap's lanes, a Jacobian's rows or columns)
// in chunks of n and concatenates the results: the same result with
// memory bounded by n lanes. By default the whole batch runs at once.
// n must be positive; the transform panics with *peel.Error otherwise.
func ChunkSize(n int) ChunkOption { return ChunkOption{n} }

func (o ChunkOption) applyVmap(c *vmapConfig) { c.chunk, c.chunkSet = o.n, true }

func (o ChunkOption) applyJacobian(c *jacobianConfig) { c.chunk, c.chunkSet = o.n, true }

// ArgnumsOption is Argnums's option, for GradArgs2/3 and the Jacobians'
// *Args forms.
type ArgnumsOption struct{ nums []int }

// Argnums selects the positional arguments (0-based) a GradArgs2/3,
// ValueAndGradArgs2/3 or JacrevArgs/JacfwdArgs form differentiates, as
// JAX's argnums; the default is all of them. A negative index counts
// from the end (-1 is the last argument), as in JAX and torch.func. The
// derivatives of the others come back as their type's zero value. The
// transform panics with *peel.Error for an index out of range, an index
// repeated (also as its negative form) or an empty list, and the
// one-argument and first-argument forms (Jacrev, Jacrev2, …) refuse it.
func Argnums(nums ...int) ArgnumsOption { return ArgnumsOption{append([]int(nil), nums...)} }

func (o ArgnumsOption) applyGradArgs(c *gradConfig) { c.argnums, c.argnumsSet = o.nums, true }

func (o ArgnumsOption) applyJacobian(c *jacobianConfig) {
	c.argnums, c.argnumsSet = o.nums, true
}

type removeViewsOpt struct{}

func (removeViewsOpt) applyFunctionalize(c *functionalizeConfig) { c.removeViews = true }

// RemoveViews makes Functionalize also replace every view by a copy below
// it (torch.func's remove="mutations_and_views"): each view primitive's
// result is copied at once, so no value below aliases another. By
// default views stay views and only mutations are removed.
func RemoveViews() FunctionalizeOption { return removeViewsOpt{} }

type decomposeOpt struct{}

func (decomposeOpt) applyGraph(c *graphConfig) { c.decompose = true }

// Decompose makes MakeGraph decompose user-defined ops into the
// primitives of their composites. By default each is one equation.
func Decompose() GraphOption { return decomposeOpt{} }

func vmapOptions(opts []VmapOption) *vmapConfig {
	c := &vmapConfig{}
	for _, o := range opts {
		o.applyVmap(c)
	}
	return c
}

func jacobianOptions(opts []JacobianOption) *jacobianConfig {
	c := &jacobianConfig{}
	for _, o := range opts {
		o.applyJacobian(c)
	}
	return c
}

// noArgnums panics with *Error naming op when Argnums was given to a
// Jacobian that differentiates one fixed argument.
func (c *jacobianConfig) noArgnums(op string) {
	if c.argnumsSet {
		treeErrorf(op, "takes no Argnums: it differentiates its first argument; use the *Args form (JacrevArgs2, JacfwdArgs3, …) to choose arguments")
	}
}

// vmap returns the Vmap configuration a Jacobian's vectorized rows use.
func (c *jacobianConfig) vmap() *vmapConfig {
	return &vmapConfig{chunk: c.chunk, chunkSet: c.chunkSet}
}

// selected resolves Argnums for a function of n arguments: which
// arguments to differentiate (all when not set). It panics with *Error
// naming op for an empty list, and as normArgnums does.
func selected(op string, set bool, nums []int, n int) []bool {
	sel := make([]bool, n)
	if !set {
		for i := range sel {
			sel[i] = true
		}
		return sel
	}
	if len(nums) == 0 {
		treeErrorf(op, "Argnums is empty: give at least one argument index")
	}
	for _, k := range normArgnums(op, "Argnums", nums, n) {
		sel[k] = true
	}
	return sel
}

// normArgnums returns the positional-argument indices nums of the option
// what (Argnums, StaticArgnums, Donate) for a function of n arguments,
// each in [0, n): a negative index counts from the end (-1 is the last
// argument), as in JAX and torch.func. It is the one place argument
// indices are normalized. It panics with *Error naming op and what for
// an index out of range after normalization, or one given twice (also
// as its negative form).
func normArgnums(op, what string, nums []int, n int) []int {
	out := make([]int, len(nums))
	for i, k := range nums {
		j := k
		if j < 0 {
			j += n
		}
		if j < 0 || j >= n {
			treeErrorf(op, "%s index %d is out of range for a function of %d arguments (valid: %d to %d)", what, k, n, -n, n-1)
		}
		for p, prev := range out[:i] {
			if prev == j {
				treeErrorf(op, "%s repeats argument %d (given as %d and %d)", what, j, nums[p], k)
			}
		}
		out[i] = j
	}
	return out
}
