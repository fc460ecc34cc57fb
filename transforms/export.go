package transforms

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/functionalize"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/internal/treeimpl"
	"github.com/peel-ml/peel/interp"
)

// ExportVersion is the newest version of the exported-program format
// (docs/export-format.md): Export writes version 1 for a program of
// fixed sizes and version 2, which adds dimension variables, for one
// exported with SymbolicShape; LoadExported reads both. A file of
// another version is refused with *peel.Error.
const ExportVersion = 2

// exportMagic opens every exported program.
const exportMagic = "PEELPROG"

// Exported is a program that Export traced and optimized, or that
// LoadExported read from bytes: a function of tensors that runs
// compiled without the Go code that traced it. Its arguments and
// results are the leaves of the traced function's argument and result
// trees, in tree order; In and Out name them. It is safe for concurrent
// use.
//
// Call it with the leaves (Call), or get it back as a function of the
// exported function's own types:
//
//	l, err := transforms.LoadExported(data)
//	predict := transforms.ExportedFunc2[Params, *peel.Tensor, *peel.Tensor](l)
//	y := predict(params, x)
type Exported struct {
	name     string
	producer string
	in, out  []ExportedLeaf
	graph    *interp.Graph
	consts   []ExportedLeaf // the constants the file left out
	data     []byte
	call     *callParams // nil while constants are missing
	be       backend.Backend
	sym      *symbolic // the dimension variables, or nil
}

// ExportedLeaf is an argument or result of an Exported program: its leaf
// path in the traced function's tree (".W", "args[0].B", "" for a lone
// tensor), its shape and dtype.
type ExportedLeaf struct {
	Path  string
	Shape []int
	DType peel.DType
	// Dims names the dimension variables of an argument of a program
	// exported with SymbolicShape, one entry per axis ("" for a fixed
	// size; nil when every size is fixed, and for results). Shape holds
	// the example's sizes then.
	Dims []string
}

func (l ExportedLeaf) String() string {
	if l.Dims == nil {
		return treeimpl.PathOr(l.Path) + " " + interp.Aval{Shape: l.Shape, DType: l.DType}.String()
	}
	dims := make([]string, len(l.Shape))
	for i, d := range l.Shape {
		dims[i] = strconv.Itoa(d)
		if l.Dims[i] != "" {
			dims[i] = l.Dims[i]
		}
	}
	return treeimpl.PathOr(l.Path) + " " + l.DType.String() + "[" + strings.Join(dims, ",") + "]"
}

// Export traces f at x, as Compile would, optimizes the graph and
// returns it as an Exported program, whose Bytes LoadExported reads back
// in a process that does not have f. x's tensors give the program's
// argument shapes and dtypes; its other parts (ints, strings, struct
// fields without tensors) are fixed at their values in x. Tensors f
// captures, and values computed from them alone, become constants of
// the program, stored in the file unless OmitConstants; weights that
// change between programs are better arguments (Export2(loss, params,
// x)).
//
// Export panics with *peel.Error naming the reason when f cannot be one
// exported program: it reads the value of a traced tensor (a graph
// break), writes its argument or a captured tensor, communicates with
// other processes, or binds a primitive whose parameters a file cannot
// hold (a Go function: a gradient hook, a custom derivative rule, a
// checkpoint policy made with SaveIf).
func Export[A, R any](f func(A) R, x A, opts ...ExportOption) *Exported {
	const op = "transforms.Export"
	if f == nil {
		treeErrorf(op, "f must not be nil")
	}
	return export(op, funcName(f), f, x, opts)
}

// ExportOption configures Export.
type ExportOption interface{ applyExport(*exportConfig) }

type exportConfig struct {
	omitConsts bool
	name       string
	sym        []symSpec
}

type exportOpt func(*exportConfig)

func (o exportOpt) applyExport(c *exportConfig) { o(c) }

// OmitConstants makes Export write the program without its constants'
// values (their names, shapes and dtypes stay): a file of the program
// alone, its weights shipped apart, in a checkpoint of
// Exported.ConstantValues (checkpoint.Save), given back to
// LoadExported with WithConstants. The constants are the optimized
// graph's: the tensors f captures, or values computed from them alone.
func OmitConstants() ExportOption { return exportOpt(func(c *exportConfig) { c.omitConsts = true }) }

// ExportName names the exported program (Exported.Name, its errors, and
// the file). By default the program is named after the function the
// user's code gave the outermost transform, found on the stack where
// the trace binds its first primitive ("main.predict" for
// Export(Vmap(predict), x)), or after f when it binds none.
func ExportName(name string) ExportOption {
	return exportOpt(func(c *exportConfig) { c.name = name })
}

func funcName(f any) string {
	if fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer()); fn != nil {
		return fn.Name()
	}
	return "f"
}

func export[A, R any](op, name string, f func(A) R, x A, opts []ExportOption) *Exported {
	var cfg exportConfig
	for _, o := range opts {
		o.applyExport(&cfg)
	}
	leaves, def, _ := treeimpl.FlattenStatics(op, x)
	in := make([]interp.Aval, len(leaves))
	for i, l := range leaves {
		in[i] = interp.AvalOf(l)
	}
	var outDef *treeDef
	traceAt := func(in []interp.Aval) *interp.Graph {
		var g *interp.Graph
		nOut := 0
		var capturedWrites, eagerWrites []*tensor
		err := interp.Catch(func() {
			g = interp.TraceAvals("export", func(vals []*tensor) []*tensor {
				fi := functionalize.New(false)
				fi.OnCapturedWrite = func(box, _ *tensor) bool {
					capturedWrites = append(capturedWrites, box)
					return true
				}
				outs := runFunctionalized(fi, flatFn(op, f, def, &outDef), vals)
				nOut = len(outs)
				// The inputs' final values: functionalize writes an input f
				// wrote back into its box.
				return append(outs, vals...)
			}, in, interp.WatchWrites(&eagerWrites), interp.RecordSites())
		})
		if err != nil {
			var ie *interp.Error
			if errors.As(err, &ie) && strings.HasPrefix(ie.Msg, "cannot read the value of a traced tensor") {
				treeErrorf(op, "%s reads the value of a traced tensor, so it is not one program (a graph break): %v", name, err)
			}
			panic(err)
		}
		for j, v := range g.Out[nOut:] {
			if v != g.In[j] {
				treeErrorf(op, "%s writes %s: an exported program is a pure function; return the new value instead", name, def.LeafName("its argument", j))
			}
		}
		g.Out = g.Out[:nOut]
		if w := append(capturedWrites, eagerWrites...); len(w) > 0 {
			treeErrorf(op, "%s writes a tensor it captures (%s): an exported program is a pure function; return the new value instead", name, w[0].TypeString())
		}
		for _, c := range g.ConstVals {
			if !c.IsConcrete() {
				treeErrorf(op, "%s captures a tracer of an enclosing transform: export it outside transforms", name)
			}
		}
		return g
	}
	g := traceAt(in)
	switch {
	case cfg.name != "":
		name = cfg.name
	default:
		for _, e := range g.Eqns {
			if e.Site != nil && e.Site.Func != "" {
				name = e.Site.Func
				break
			}
		}
	}
	var body []byte
	var sym *symbolic
	var opt *interp.Graph // the optimized graph of a program of fixed sizes
	version := uint64(1)
	if len(cfg.sym) > 0 {
		// Sizes that are expressions of dimension variables: the graph
		// as traced (the loader optimizes each instance), fitted from
		// several traces (export_symbolic.go).
		if cfg.omitConsts {
			treeErrorf(op, "OmitConstants and SymbolicShape together are not supported: keep the constants in the file, or make them arguments")
		}
		encode := func(g *interp.Graph) []byte {
			b, err := graphio.Encode(g.DCE(), false)
			if err != nil {
				treeErrorf(op, "%s cannot be exported: %v", name, err)
			}
			return b
		}
		first := true
		sym = exportSymbolic(op, name, cfg.sym, def.Paths(), in, func(avals []interp.Aval) []byte {
			if first {
				first = false
				return encode(g)
			}
			return encode(traceAt(avals))
		})
		body, version = sym.body, 2
	} else {
		opt, _ = compiler.Optimize(g.DCE(), compiler.DefaultPasses(), false)
		var encErr error
		body, encErr = graphio.Encode(opt, cfg.omitConsts)
		if encErr != nil {
			treeErrorf(op, "%s cannot be exported: %v", name, encErr)
		}
	}
	var b []byte
	b = append(b, exportMagic...)
	b = binary.AppendUvarint(b, version)
	b = appendString(b, peel.Version())
	b = appendString(b, name)
	b = binary.AppendUvarint(b, uint64(len(leaves)))
	for _, p := range def.Paths() {
		b = appendString(b, p)
	}
	b = binary.AppendUvarint(b, uint64(len(g.Out)))
	for _, p := range outDef.Paths() {
		b = appendString(b, p)
	}
	if sym != nil {
		b = appendSymbolic(b, sym)
	}
	b = binary.AppendUvarint(b, uint64(len(body)))
	b = append(b, body...)
	var lo []LoadOption
	if cfg.omitConsts && len(opt.ConstVals) > 0 {
		lo = append(lo, WithConstants(constNames(opt.ConstVals)))
	}
	e, lerr := loadExported(b, true, lo)
	if lerr != nil {
		// The encoding is peel's own: a failure to read it back is a bug.
		treeErrorf(op, "%s: the exported program does not load: %v", name, lerr)
	}
	return e
}

// constNames names a program's constants "const0", "const1", ….
func constNames(ts []*tensor) map[string]*tensor {
	m := make(map[string]*tensor, len(ts))
	for i, t := range ts {
		m[constName(i)] = t
	}
	return m
}

func constName(i int) string { return "const" + strconv.Itoa(i) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Bytes returns the program in the exported-program format (a copy).
func (e *Exported) Bytes() []byte { return slices.Clone(e.data) }

// WriteTo writes the program in the exported-program format to w.
func (e *Exported) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(e.data)
	return int64(n), err
}

// Name returns the program's name: ExportName's, or the Go name of the
// function the user's code gave the outermost transform ("main.predict"
// for Export(Vmap(predict), x)).
func (e *Exported) Name() string { return e.name }

// Producer returns the version of peel that exported the program.
func (e *Exported) Producer() string { return e.producer }

// In returns the program's arguments.
func (e *Exported) In() []ExportedLeaf { return slices.Clone(e.in) }

// Out returns the program's results.
func (e *Exported) Out() []ExportedLeaf { return slices.Clone(e.out) }

// Constants returns the names ("const0", …), shapes and dtypes of the
// constants the file was written without (OmitConstants), which
// WithConstants gives: empty for a file that holds its constants.
func (e *Exported) Constants() []ExportedLeaf { return slices.Clone(e.consts) }

// ConstantValues returns the values of the constants the file was
// written without, by name (for checkpoint.Save), when this program has
// them (it was exported here, or loaded WithConstants); nil otherwise.
func (e *Exported) ConstantValues() map[string]*peel.Tensor {
	if len(e.consts) == 0 || e.call == nil {
		return nil
	}
	return constNames(e.graph.ConstVals)
}

// Graph returns the program's graph (for Graph.DOT and Graph.String),
// which must not be modified.
func (e *Exported) Graph() *interp.Graph { return e.graph }

// String describes the program: its name and signature.
func (e *Exported) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s(", e.name)
	for i, l := range e.in {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(l.String())
	}
	b.WriteString(") -> (")
	for i, l := range e.out {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(l.String())
	}
	b.WriteString(")")
	return b.String()
}

// Call runs the program on its argument leaves and returns its result
// leaves. On concrete tensors it runs the compiled program; under a
// transform (Vmap, Grad, JVP, Compile …) it is one primitive to the
// transform, as a compiled function is: vmapped by batching its graph,
// differentiated through its graph's rules, staged as one call. It
// panics with *peel.Error naming the argument when the arguments'
// number, shapes or dtypes differ from In.
func (e *Exported) Call(args ...*peel.Tensor) []*peel.Tensor {
	op := "transforms.Exported.Call (" + e.name + ")"
	if e.call == nil {
		treeErrorf(op, "the program was exported without its %d constants (OmitConstants): load it with WithConstants", len(e.consts))
	}
	if len(args) != len(e.in) {
		treeErrorf(op, "the program takes %d arguments (%s), got %d", len(e.in), e.signature(), len(args))
	}
	for i, a := range args {
		if a == nil {
			treeErrorf(op, "argument %s is nil", treeimpl.PathOr(e.in[i].Path))
		}
	}
	call := e.call
	in := func(i int) interp.Aval { return interp.Aval{Shape: e.in[i].Shape, DType: e.in[i].DType} }
	if e.sym != nil {
		inst := e.instance(op, args)
		call, in = inst.call, func(i int) interp.Aval { return inst.in[i] }
	}
	concrete := true
	for i, a := range args {
		if want := in(i); !interp.AvalOf(a).Equal(want) {
			if e.sym != nil {
				treeErrorf(op, "argument %s must be %s (%s at these sizes), got %s", treeimpl.PathOr(e.in[i].Path), e.in[i].String()[len(treeimpl.PathOr(e.in[i].Path))+1:], want, a.TypeString())
			}
			treeErrorf(op, "argument %s must be %s, got %s", treeimpl.PathOr(e.in[i].Path), want, a.TypeString())
		}
		concrete = concrete && a.IsConcrete()
	}
	if concrete && call.prog != nil {
		return call.prog.Run(args, nil)
	}
	return interp.Bind(compiledCall, call, args...)
}

func (e *Exported) signature() string {
	parts := make([]string, len(e.in))
	for i, l := range e.in {
		parts[i] = l.String()
	}
	return strings.Join(parts, ", ")
}

// ExportedFunc returns the program as a function of the exported
// function's types: A's tensor leaves are its arguments (their paths
// must be In's), and its results fill a zero R (whose leaf paths must be
// Out's: a tensor, a struct of tensors or of such structs, an array, a
// tuple; a result tree with slices or maps needs Call). It panics with
// *peel.Error when R's structure does not fit, and the function panics
// as Call does and when A's paths differ from In's.
func ExportedFunc[A, R any](e *Exported) func(A) R {
	const op = "transforms.ExportedFunc"
	def, at := e.resultDef(op, reflect.TypeFor[R]())
	return func(x A) R {
		leaves, d := treeimpl.Flatten(op, x)
		e.checkPaths(op, d.Paths())
		return build[R](def, place(at, e.Call(leaves...)))
	}
}

func (e *Exported) checkPaths(op string, paths []string) {
	same := len(paths) == len(e.in)
	for i := 0; same && i < len(paths); i++ {
		same = paths[i] == e.in[i].Path
	}
	if !same {
		treeErrorf(op, "the argument's leaves differ from the program's: it takes %s", e.signature())
	}
}

// resultDef is the structure of a zero value of type t, whose tensors
// are its leaves, and the program's result at each of them (-1: none, an
// empty subtree of the exported function's result, left nil): t's
// tensors must have the program's result paths among theirs, in order.
func (e *Exported) resultDef(op string, t reflect.Type) (*treeDef, []int) {
	_, def := treeimpl.FlattenAs(op, reflect.Zero(t).Interface(), treeimpl.AuxTree)
	paths := def.Paths()
	at := make([]int, len(paths))
	j := 0
	for i, p := range paths {
		at[i] = -1
		if j < len(e.out) && p == e.out[j].Path {
			at[i] = j
			j++
		}
	}
	if j < len(e.out) {
		var want []string
		for _, l := range e.out {
			want = append(want, treeimpl.PathOr(l.Path))
		}
		treeErrorf(op, "the program's results are %v, but a %s has the leaves %v: use Exported.Call", want, t, paths)
	}
	return def, at
}

// place puts the program's results where resultDef's positions say, nil
// elsewhere.
func place(at []int, res []*tensor) []*tensor {
	out := make([]*tensor, len(at))
	for i, j := range at {
		if j >= 0 {
			out[i] = res[j]
		}
	}
	return out
}

// LoadOption configures LoadExported.
type LoadOption interface{ applyLoad(*loadConfig) }

type loadConfig struct {
	be     backend.Backend
	consts map[string]*peel.Tensor
}

type loadOpt func(*loadConfig)

func (o loadOpt) applyLoad(c *loadConfig) { o(c) }

// OnBackend makes the loaded program run on be: its constants are placed
// there, and its arguments must live there. The default is the default
// backend.
func OnBackend(be backend.Backend) LoadOption { return loadOpt(func(c *loadConfig) { c.be = be }) }

// WithConstants gives the constants of a program exported with
// OmitConstants, by name ("const0", …: Exported.Constants), such as
// checkpoint.Load(path, like) of a checkpoint.Save(path,
// e.ConstantValues()), like made from Constants. They must live on the
// program's backend.
func WithConstants(ts map[string]*peel.Tensor) LoadOption {
	return loadOpt(func(c *loadConfig) { c.consts = ts })
}

// LoadExported reads a program Export wrote. It never panics: a file of
// another format version, a primitive this binary does not have, or a
// malformed, truncated or hostile file is a *peel.Error saying what and
// where. Every equation is type-checked as it is read, every count is
// bounded by the bytes that are left and every value's size by the
// allocation limit, so reading allocates at most a few times the file's
// size.
func LoadExported(data []byte, opts ...LoadOption) (*Exported, error) {
	return loadExported(data, false, opts)
}

// loadExported is LoadExported; owned says that data is the caller's to
// keep (no copy is made for Bytes).
func loadExported(data []byte, owned bool, opts []LoadOption) (e *Exported, err error) {
	const op = "transforms.LoadExported"
	var cfg loadConfig
	for _, o := range opts {
		o.applyLoad(&cfg)
	}
	if cfg.be == nil {
		cfg.be = interp.DefaultBackend()
	}
	fail := func(format string, args ...any) (*Exported, error) {
		return nil, &peel.Error{Ops: []string{op}, Msg: fmt.Sprintf(format, args...)}
	}
	if !bytes.HasPrefix(data, []byte(exportMagic)) {
		return fail("not an exported peel program (it does not start with %q)", exportMagic)
	}
	r := graphio.NewReader(data[len(exportMagic):])
	version := r.Uint()
	if r.Err() == nil && version != 1 && version != ExportVersion {
		return fail("the program is in format version %d; this peel (%s) reads versions 1 to %d: export it again with this version, or load it with the version that wrote it", version, peel.Version(), ExportVersion)
	}
	e = &Exported{be: cfg.be}
	e.producer = r.Text()
	e.name = r.Text()
	inPaths := make([]string, r.Len())
	for i := range inPaths {
		inPaths[i] = r.Text()
	}
	outPaths := make([]string, r.Len())
	for i := range outPaths {
		outPaths[i] = r.Text()
	}
	if version == 2 && r.Err() == nil {
		e.sym = readSymbolic(r, len(inPaths))
	}
	n := r.Uint()
	off := len(exportMagic) + r.Offset()
	if r.Err() == nil && n != uint64(len(data)-off) {
		r.Failf("the graph is %d bytes but %d follow", n, len(data)-off)
	}
	if r.Err() != nil {
		return fail("malformed header: %v", r.Err())
	}
	g, gerr := graphio.Decode(data[off:], cfg.be)
	if gerr != nil {
		return fail("%s (exported by peel %s): graph: %v", e.name, e.producer, gerr)
	}
	if len(inPaths) != len(g.In) || len(outPaths) != len(g.Out) {
		return fail("%s: the header names %d arguments and %d results, the graph has %d and %d", e.name, len(inPaths), len(outPaths), len(g.In), len(g.Out))
	}
	for i, v := range g.In {
		e.in = append(e.in, ExportedLeaf{Path: inPaths[i], Shape: v.Aval.Shape, DType: v.Aval.DType})
		if e.sym != nil {
			e.in[i].Dims = e.sym.symDims(i, len(v.Aval.Shape))
		}
	}
	for i, v := range g.Out {
		e.out = append(e.out, ExportedLeaf{Path: outPaths[i], Shape: v.Aval.Shape, DType: v.Aval.DType})
	}
	e.data = data
	if !owned {
		e.data = slices.Clone(data)
	}
	if e.sym != nil {
		e.sym.body = e.data[off:]
		for _, b := range e.sym.binds {
			if b.axis >= len(g.In[b.leaf].Aval.Shape) {
				return fail("%s: a dimension variable on axis %d of argument %s of rank %d", e.name, b.axis, inPaths[b.leaf], len(g.In[b.leaf].Aval.Shape))
			}
		}
	}
	omitted := slices.Contains(g.ConstVals, nil)
	if omitted {
		for i, v := range g.Consts {
			e.consts = append(e.consts, ExportedLeaf{Path: constName(i), Shape: v.Aval.Shape, DType: v.Aval.DType})
		}
	}
	e.graph = g
	switch {
	case len(cfg.consts) > 0 && !omitted:
		return fail("%s: WithConstants gives constants to a program whose file holds them", e.name)
	case omitted && len(cfg.consts) == 0:
		return e, nil // Call refuses until WithConstants
	case omitted:
		var bad []string
		vals := make([]*peel.Tensor, len(g.Consts))
		for i, l := range e.consts {
			t, ok := cfg.consts[l.Path]
			switch {
			case !ok || t == nil:
				bad = append(bad, l.Path+" is missing")
			case !t.IsConcrete() || !interp.AvalOf(t).Equal(interp.Aval{Shape: l.Shape, DType: l.DType}):
				bad = append(bad, fmt.Sprintf("%s must be a concrete %s, got %s", l.Path, interp.Aval{Shape: l.Shape, DType: l.DType}, t.TypeString()))
			default:
				if _, be := interp.ArrayOf(t); be != cfg.be {
					bad = append(bad, fmt.Sprintf("%s lives on backend %s, the program on %s", l.Path, be.Name(), cfg.be.Name()))
				}
			}
			vals[i] = t
		}
		for name := range cfg.consts {
			if !slices.ContainsFunc(e.consts, func(l ExportedLeaf) bool { return l.Path == name }) {
				bad = append(bad, name+" is not a constant of the program")
			}
		}
		if len(bad) > 0 {
			slices.Sort(bad)
			return fail("%s: WithConstants: %s", e.name, strings.Join(bad, "; "))
		}
		g.ConstVals = vals
	}
	if cerr := interp.Catch(func() { e.call = newCallParamsOn(e.name, g, cfg.be) }); cerr != nil {
		return fail("%s: %v", e.name, cerr)
	}
	return e, nil
}

// ReadExported reads a program Export wrote from r (see LoadExported).
func ReadExported(r io.Reader, opts ...LoadOption) (*Exported, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return loadExported(data, true, opts)
}
