package transforms

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/interp"
)

// Compiled backward passes (CompileBackward). The transpose of a linear
// graph L is traced into a graph whose inputs are the nonzero output
// cotangents and L's constants (so the program is keyed by L's
// structure, never its values), optimized, built by the compiler, and
// cached by that structure; later gradients of the same structure run
// the program on their own cotangents and residuals.

// backwardPrograms caches the compiled backward programs by structure
// (see backwardKey), at most maxBackwardPrograms of them: the least
// recently used are dropped (and compiled again when needed).
var backwardPrograms = lru.New[string, program](maxBackwardPrograms)

const maxBackwardPrograms = 1024

// transposeCompiled is l.Transpose with the backward pass run as a
// compiled program, when l's structure allows it (see backwardKey) and
// every cotangent and constant is concrete; otherwise it is l.Transpose.
func transposeCompiled(l *autodiff.Linearized, cts []*tensor) []*tensor {
	g := l.Graph
	key, ok := backwardKey(g, cts)
	if !ok {
		return l.Transpose(cts)
	}
	var args []*tensor
	for _, c := range cts {
		if c != nil {
			args = append(args, c)
		}
	}
	args = append(args, g.ConstVals...)
	v, hit := backwardPrograms.Load(key)
	if !hit {
		v, _ = backwardPrograms.LoadOrStore(key, compileBackward(g, cts))
	}
	return v.Run(args, nil)
}

// compileBackward traces the transpose of g (for cotangents where cts
// has them) with its constants as inputs, and builds the program.
func compileBackward(g *interp.Graph, cts []*tensor) program {
	var avals []interp.Aval
	for _, c := range cts {
		if c != nil {
			avals = append(avals, interp.AvalOf(c))
		}
	}
	for _, v := range g.Consts {
		avals = append(avals, v.Aval)
	}
	traced := interp.TraceAvals("backward", func(in []*tensor) []*tensor {
		ct := make([]*tensor, len(cts))
		k := 0
		for i, c := range cts {
			if c != nil {
				ct[i] = in[k]
				k++
			}
		}
		h := &interp.Graph{In: g.In, Consts: g.Consts, ConstVals: in[k:], Eqns: g.Eqns, Out: g.Out}
		res := autodiff.TransposeGraph(h, ct)
		for i, r := range res {
			if r == nil {
				res[i] = autodiff.Zeros(g.In[i].Aval)
			}
		}
		return res
	}, avals)
	return buildProgram(optimize(traced))
}

// backwardKey returns the structure of g with which cotangents are
// nonzero, or false when the backward pass must run eagerly: a
// cotangent or constant is not concrete (the gradient is under another
// transform), or an equation's parameters may hold values (pointers,
// interfaces, functions: a user-defined op's rule, a checkpoint, a
// compiled call), which a program keyed by structure would bake in.
func backwardKey(g *interp.Graph, cts []*tensor) (string, bool) {
	var b strings.Builder
	for _, c := range cts {
		switch {
		case c == nil:
			b.WriteString("0,")
		case !c.IsConcrete():
			return "", false
		default:
			b.WriteString(interp.AvalsKey([]interp.Aval{interp.AvalOf(c)}))
			b.WriteByte(',')
		}
	}
	if !structureKey(&b, g) {
		return "", false
	}
	for _, c := range g.ConstVals {
		if !c.IsConcrete() {
			return "", false
		}
	}
	return b.String(), true
}

// structureKey writes g's structure to b: its inputs', constants' and
// equations' vars with their types, each equation's primitive and
// parameters (printed with %v), and the outputs; it reports false when
// an equation's parameters are not plain data (see plainType), which
// the key could not tell apart.
func structureKey(b *strings.Builder, g *interp.Graph) bool {
	b.WriteString("|in ")
	for _, v := range g.In {
		writeVar(b, v)
	}
	b.WriteString("|consts ")
	for _, v := range g.Consts {
		writeVar(b, v)
	}
	for _, e := range g.Eqns {
		if e.Params != nil && !plainType(reflect.TypeOf(e.Params)) {
			return false
		}
		b.WriteString("|")
		b.WriteString(strconv.Itoa(e.Prim.ID))
		fmt.Fprintf(b, "%v", e.Params)
		for _, v := range e.In {
			b.WriteByte(' ')
			b.WriteString(strconv.Itoa(v.ID))
		}
		b.WriteString(" ->")
		for _, v := range e.Out {
			writeVar(b, v)
		}
	}
	b.WriteString("|out ")
	for _, v := range g.Out {
		b.WriteString(strconv.Itoa(v.ID))
		b.WriteByte(' ')
	}
	return true
}

func writeVar(b *strings.Builder, v *interp.Var) {
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(v.ID))
	b.WriteByte(':')
	b.WriteString(interp.AvalsKey([]interp.Aval{v.Aval}))
}

// plainTypes caches plainType.
var plainTypes sync.Map // reflect.Type → bool

// plainType reports whether values of t are made only of booleans,
// numbers and strings (in structs, arrays and slices), so that %v
// prints all of them: the parameters of peel's own primitives.
func plainType(t reflect.Type) bool {
	if v, ok := plainTypes.Load(t); ok {
		return v.(bool)
	}
	var plain func(t reflect.Type, depth int) bool
	plain = func(t reflect.Type, depth int) bool {
		if depth > 8 {
			return false
		}
		switch t.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64, reflect.String:
			return true
		case reflect.Array, reflect.Slice:
			return plain(t.Elem(), depth+1)
		case reflect.Struct:
			for i := range t.NumField() {
				if !plain(t.Field(i).Type, depth+1) {
					return false
				}
			}
			return true
		}
		return false
	}
	p := plain(t, 0)
	plainTypes.Store(t, p)
	return p
}
