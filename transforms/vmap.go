package transforms

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/internal/treeimpl"
	"github.com/peel-ml/peel/interp"
)

// unmapped is the resolved axis of a leaf that is not mapped. It is
// distinct from every axis the user can give: resolveAxes rejects ints
// out of a leaf's range, math.MinInt included.
const unmapped = math.MinInt

// NoAxis marks, in InAxes or OutAxes, a value that is not mapped (JAX's
// None).
var NoAxis = noAxis{}

type noAxis struct{}

// Vmap returns f vectorized over a batch dimension of its argument (a
// tree): each mapped leaf is sliced along its in axis, f is applied per
// lane — as one batched computation, not a loop — and the results are
// stacked along their out axes. Vmap nests to any depth and composes
// with every other transform; Vmap2 and Vmap3 vectorize functions of two
// and three arguments.
//
// The returned function panics with *peel.Error (naming vmap and its
// level) when the argument or f's result is not a valid tree (see
// Grad) or holds a nil tensor, an InAxes or OutAxes spec does not match
// the tree (a prefix for a tensor, a slice spec of another length, a map
// spec with a missing or extra key or field; the error names the path),
// an axis is out of range for its leaf or given for a subtree with no
// tensor, mapped arguments have different sizes, no argument is mapped
// and AxisSize is not set, AxisSize is negative, ChunkSize is not
// positive, f reads a batched value's data (data-dependent Go control
// flow), or f writes a batched value in place into a tensor that is not
// batched (use Functionalize).
func Vmap[A, B any](f func(A) B, opts ...VmapOption) func(A) B {
	needFunc("transforms.Vmap", f)
	return vmapTree("transforms.Vmap", 1, f, vmapOptions(opts))
}

// vmapTree is Vmap of f, whose argument is the tuple of nargs positional
// arguments (nargs > 1) or the one argument.
func vmapTree[A, B any](op string, nargs int, f func(A) B, cfg *vmapConfig) func(A) B {
	spec := inSpec(op, cfg, nargs)
	return func(x A) B {
		leaves, def := flatten(op, x)
		axes := resolveAxes(op, "in", spec, def.Proto())
		var outDef *treeDef
		fl := flatFn(op, f, def, &outDef)
		names := &vmapNames{in: def, nargs: nargs}
		outs := vmapFlat(op, cfg, fl, leaves, axes, func(outs []*tensor) []int {
			_, d := flatten(op, build[B](outDef, outs))
			names.out = d
			spec := cfg.outAxes
			if cfg.outSet && spec == nil {
				spec = NoAxis // an explicit nil is not mapped
			}
			return resolveAxes(op, "out", spec, d.Proto())
		}, names)
		return build[B](outDef, outs)
	}
}

// inSpec returns the in-axes spec of a function of nargs arguments: the
// one spec (nargs == 1), a []any over the argument tuple, or one int or
// NoAxis for every argument. It panics with *Error naming op when the
// number of specs does not match.
func inSpec(op string, cfg *vmapConfig, nargs int) any {
	if !cfg.inSet {
		return nil
	}
	s := cfg.inAxes
	switch {
	case len(s) == 1 && s[0] == nil:
		return NoAxis // an explicit nil is not mapped, as inside a prefix
	case nargs == 1 && len(s) == 1:
		return s[0]
	case len(s) == nargs:
		return s
	case len(s) == 1:
		switch s[0].(type) {
		case int, noAxis:
			return s[0] // one axis for every argument
		}
	}
	treeErrorf(op, "InAxes has %d specs, but the function takes %d arguments: give one spec per argument (or one int or NoAxis for all)", len(s), nargs)
	return nil
}

// vmapFlat runs fl over a batch: inputs with axes (unmapped for
// unmapped ones); outAxes gives the out axis of each result (called once
// with the results of the first chunk).
func vmapFlat(op string, cfg *vmapConfig, fl func([]*tensor) []*tensor, inputs []*tensor, axes []int, outAxes func([]*tensor) []int, names *vmapNames) []*tensor {
	size := -1
	var sizes []string
	lanes := make([]int, len(inputs)) // each mapped leaf's size, -1 unmapped
	for i, x := range inputs {
		lanes[i] = -1
		if axes[i] == unmapped {
			continue
		}
		a := axes[i]
		if a < -x.Rank() || a >= x.Rank() {
			treeErrorf(op, "in axis %d is out of range for argument %s of shape %v%s", a, names.inName(i), x.Shape(), noAxisHint)
		}
		if a < 0 {
			a += x.Rank()
		}
		axes[i] = a
		n := x.Shape()[a]
		lanes[i] = n
		sizes = append(sizes, fmt.Sprintf("%s: %d", names.inName(i), n))
		if size >= 0 && n != size {
			size = -2
		} else if size != -2 {
			size = n
		}
	}
	if cfg.axisSize < 0 {
		treeErrorf(op, "AxisSize must be positive, not %d", cfg.axisSize)
	}
	switch {
	case size == -2:
		treeErrorf(op, "mapped arguments have different sizes along their in axes (%s)%s", strings.Join(sizes, ", "), names.inAxesHint(lanes))
	case size == -1 && cfg.axisSize <= 0:
		treeErrorf(op, "no argument is mapped: set AxisSize")
	case size == -1:
		size = cfg.axisSize
	case cfg.axisSize > 0 && cfg.axisSize != size:
		treeErrorf(op, "AxisSize is %d but the mapped arguments have size %d", cfg.axisSize, size)
	}
	if cfg.chunkSet && cfg.chunk <= 0 {
		treeErrorf(op, "ChunkSize must be positive, not %d", cfg.chunk)
	}
	if cfg.axisName != "" && cfg.chunkSet && cfg.chunk < size {
		treeErrorf(op, "ChunkSize %d with AxisName(%q): a collective over the axis must see the whole batch of %d, not a chunk", cfg.chunk, cfg.axisName, size)
	}
	if !cfg.chunkSet || cfg.chunk >= size {
		return vmapRun(size, cfg.axisName, fl, inputs, axes, outAxes, names)
	}
	// Chunks: run each on a slice of the mapped inputs and concatenate.
	var parts [][]*tensor
	var oax []int
	for lo := 0; lo < size; lo += cfg.chunk {
		hi := min(lo+cfg.chunk, size)
		in := make([]*tensor, len(inputs))
		for i, x := range inputs {
			in[i] = x
			if axes[i] != unmapped {
				in[i] = peel.Slice(x, axes[i], lo, hi, 1)
			}
		}
		outs := vmapRun(hi-lo, "", fl, in, axes, func(o []*tensor) []int {
			if oax == nil {
				oax = outAxes(o)
			}
			return oax
		}, names)
		parts = append(parts, outs)
	}
	res := make([]*tensor, len(parts[0]))
	for j := range res {
		cs := make([]*tensor, len(parts))
		for k := range parts {
			cs[k] = parts[k][j]
		}
		res[j] = peel.Concat(cs, oax[j])
	}
	return res
}

// vmapNames names the leaves of a vmapped function's argument and result
// trees in errors (nil: by number).
type vmapNames struct {
	in, out *treeDef
	nargs   int // the positional arguments, when more than one (leaf paths args[k]…)
}

func (n *vmapNames) inName(i int) string {
	if n == nil {
		return fmt.Sprintf("leaf %d", i)
	}
	return n.in.LeafName("(the whole argument)", i)
}

// inAxesHint suggests an InAxes when the mapped leaves' sizes disagree
// only across positional arguments, as when parameters are mapped with
// the batch: the arguments whose mapped leaves all have one size, the
// size most of them share, stay mapped, and the others get NoAxis. It
// returns "" when there is nothing to suggest.
func (n *vmapNames) inAxesHint(lanes []int) string {
	if n == nil || n.nargs < 2 {
		return ""
	}
	size := make([]int, n.nargs) // each argument's one size; 0 none, -1 several
	for i, l := range lanes {
		k := argOfPath(n.in.Paths()[i])
		if l < 0 || k < 0 || k >= n.nargs {
			continue
		}
		switch size[k] {
		case 0:
			size[k] = l
		case l:
		default:
			size[k] = -1
		}
	}
	count := map[int]int{}
	best := 0
	for _, s := range size {
		if s > 0 {
			count[s]++
			if count[s] > count[best] || count[s] == count[best] && s > best {
				best = s
			}
		}
	}
	if best == 0 {
		return ""
	}
	specs := make([]string, n.nargs)
	for k, s := range size {
		specs[k] = "transforms.NoAxis"
		if s == best {
			specs[k] = "0"
		}
	}
	return fmt.Sprintf("; to map only the arguments of size %d and pass the others whole to every lane (parameters, say), give transforms.InAxes(%s) (with each mapped argument's own axis)", best, strings.Join(specs, ", "))
}

func (n *vmapNames) outName(i int) string {
	if n == nil {
		return fmt.Sprintf("leaf %d", i)
	}
	return n.out.LeafName("(the whole result)", i)
}

// vmapRun runs fl once at a vmap level of the given size, which binds
// the axis name when it is not "": the level carries the name's frame
// (collectives find it from their operands, in any goroutine), and the
// calling goroutine's frame for the name (interp.PushAxis) points
// AxisIndex, and collectives on values that do not vary along the axis,
// at the level while fl runs.
func vmapRun(size int, name string, fl func([]*tensor) []*tensor, inputs []*tensor, axes []int, outAxes func([]*tensor) []int, names *vmapNames) []*tensor {
	b := batching.New(size)
	if name != "" {
		b = batching.NewNamed(size, name)
		defer interp.PushAxis(b.Frame())()
	}
	defer b.End()
	in := make([]*tensor, len(inputs))
	for i, x := range inputs {
		if axes[i] == unmapped {
			in[i] = x
		} else {
			in[i] = b.Batched(x, axes[i])
		}
	}
	outs := func() []*tensor {
		defer interp.AnnotateLevel(b.Level())
		return fl(in)
	}()
	oax := outAxes(outs)
	res := make([]*tensor, len(outs))
	for i, o := range outs {
		if o == nil {
			treeErrorf("transforms.Vmap", "the function returned a nil tensor at result %s", names.outName(i))
		}
		a := oax[i]
		if a == unmapped {
			if tr := interp.TracerOf(o); tr != nil && tr.Level() == b.Level() {
				treeErrorf("transforms.Vmap", "result %s is batched but its out axis is NoAxis", names.outName(i))
			}
			res[i] = o
			continue
		}
		r := o.Rank() + 1
		if a < -r || a >= r {
			treeErrorf("transforms.Vmap", "out axis %d is out of range for result %s of rank %d", a, names.outName(i), o.Rank())
		}
		if a < 0 {
			a += r
		}
		res[i] = b.Unbatched(o, a)
	}
	return res
}

// resolveAxes gives each tensor leaf of v its axis from spec (see
// InAxes); nil spec means 0 for all. which is "in" (v is the argument:
// an axis of a leaf of rank r is in [-r, r)) or "out" (v is f's result
// per lane: the batch dimension goes at an axis in [-r-1, r]). It panics
// with *Error naming op and the path when the spec does not match the
// tree or an axis is out of range.
func resolveAxes(op, which string, spec any, v reflect.Value) []int {
	if spec == nil {
		spec = 0
	}
	return resolvePrefix(op, which+" axes", spec, v, "give a tensor an int or NoAxis", func(spec any, path string, v reflect.Value) ([]int, bool) {
		var out []int
		switch s := spec.(type) {
		case int:
			walk(op, v, path, func(lp string, t *peel.Tensor) {
				checkAxis(op, which, s, lp, t)
				out = append(out, s)
			})
			if len(out) == 0 {
				treeErrorf(op, "%s axis %d is given for %s, which holds no tensor", which, s, pathOr(path))
			}
			return out, true
		case noAxis, nil:
			walk(op, v, path, func(string, *peel.Tensor) { out = append(out, unmapped) })
			return out, true
		}
		return nil, false
	})
}

// resolvePrefix resolves spec, a prefix tree of leaf specs over the tree
// v ([]any for a slice, an array or the positional tuple of several
// arguments; map[string]any for a map or a struct, by key or exported
// field name), into one value per tensor leaf of v, in leaf order: leaf
// answers a spec that covers a whole subtree (ok false for a spec that is
// not a leaf spec), with the values of that subtree's leaves. what names
// the spec in errors ("in axes", "in specs") and hint says what a tensor
// takes. It panics with *Error naming op and the path when the spec does
// not match the tree.
func resolvePrefix[L any](op, what string, spec any, v reflect.Value, hint string, leaf func(spec any, path string, v reflect.Value) ([]L, bool)) []L {
	var out []L
	var walkSpec func(spec any, v reflect.Value, path string)
	walkSpec = func(spec any, v reflect.Value, path string) {
		if vals, ok := leaf(spec, path, v); ok {
			out = append(out, vals...)
			return
		}
		switch spec.(type) {
		case []any, map[string]any:
		default:
			treeErrorf(op, "%s: unsupported spec %T at %s (%s; []any or map[string]any for a subtree)", what, spec, pathOr(path), hint)
		}
		kind := "[]any"
		if _, ok := spec.(map[string]any); ok {
			kind = "map[string]any"
		}
		if v.Type() == tensorType {
			treeErrorf(op, "%s: %s is a tensor, which a %s spec does not match: %s", what, pathOr(path), kind, hint)
		}
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				treeErrorf(op, "%s: %s is nil, which a %s spec does not match", what, pathOr(path), kind)
			}
			v = v.Elem()
			if v.Type() == tensorType {
				treeErrorf(op, "%s: %s is a tensor, which a %s spec does not match: %s", what, pathOr(path), kind, hint)
			}
		}
		switch s := spec.(type) {
		case []any:
			if v.Kind() == reflect.Struct && v.Type().Implements(argsTupleType) {
				for i := range s {
					walkSpec(s[i], v.Field(i), treeimpl.FieldPath(path, v.Type().Field(i)))
				}
				return
			}
			if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
				treeErrorf(op, "%s: %s is a %v, which a []any spec does not match", what, pathOr(path), v.Type())
			}
			if v.Len() != len(s) {
				treeErrorf(op, "%s: %s is a %v of length %d, which a []any of length %d does not match", what, pathOr(path), v.Type(), v.Len(), len(s))
			}
			for i := range s {
				walkSpec(s[i], v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		case map[string]any:
			have := map[string]bool{}
			switch v.Kind() {
			case reflect.Map:
				if v.Type().Key().Kind() != reflect.String {
					treeErrorf(op, "%s: %s is a map with %v keys, which a map[string]any spec does not match", what, pathOr(path), v.Type().Key())
				}
				for _, k := range sortedKeys(v) {
					have[k.String()] = true
					sub, ok := s[k.String()]
					if !ok {
						treeErrorf(op, "%s: no entry for key %q of %s", what, k.String(), pathOr(path))
					}
					walkSpec(sub, v.MapIndex(k), fmt.Sprintf("%s[%q]", path, k.String()))
				}
			case reflect.Struct:
				t := v.Type()
				for i := 0; i < t.NumField(); i++ {
					if !t.Field(i).IsExported() {
						continue
					}
					sub, ok := s[t.Field(i).Name]
					if !ok && !treeimpl.MayHoldTensor(t.Field(i).Type) {
						continue // a static field needs no entry
					}
					have[t.Field(i).Name] = true
					if !ok {
						treeErrorf(op, "%s: no entry for field %s of %s", what, t.Field(i).Name, pathOr(path))
					}
					walkSpec(sub, v.Field(i), treeimpl.FieldPath(path, t.Field(i)))
				}
			default:
				treeErrorf(op, "%s: %s is a %v, which a map[string]any spec does not match", what, pathOr(path), v.Type())
			}
			if len(have) != len(s) {
				var extra []string
				for k := range s {
					if !have[k] {
						extra = append(extra, k)
					}
				}
				sort.Strings(extra)
				kind := "key"
				if v.Kind() == reflect.Struct {
					kind = "exported field"
				}
				treeErrorf(op, "%s: the spec has an entry %q, but %s (a %v) has no such %s", what, extra[0], pathOr(path), v.Type(), kind)
			}
		}
	}
	walkSpec(spec, v, "")
	return out
}

// checkAxis panics with *Error naming op when axis is out of range for
// the leaf t at path (see resolveAxes).
func checkAxis(op, which string, axis int, path string, t *peel.Tensor) {
	r := t.Rank()
	if which == "out" {
		if axis < -r-1 || axis > r {
			treeErrorf(op, "out axis %d is out of range for result leaf %s of rank %d: with the batch dimension the result has rank %d, so the axis must be in [%d, %d]", axis, pathOr(path), r, r+1, -r-1, r)
		}
		return
	}
	if axis < -r || axis >= r {
		treeErrorf(op, "in axis %d is out of range for argument leaf %s of rank %d (shape %v): the axis must be in [%d, %d)%s", axis, pathOr(path), r, t.Shape(), -r, r, noAxisHint)
	}
}

// noAxisHint ends the message of an in axis out of range for its leaf.
const noAxisHint = "; to pass the leaf unmapped (the same value for every lane), give it transforms.NoAxis in InAxes"
