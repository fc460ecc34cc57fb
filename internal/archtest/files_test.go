package archtest

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// higherOrder lists the files of package transforms that define a
// higher-order primitive (its params, rules and public functions), in
// families: the files of one primitive (while.go and while_bounded.go,
// the bounded loop's reverse mode). A family may use what graphs.go and
// partial_eval.go (the helpers they share) and the package's other files
// define, and any family's exported API (as a user would: the bounded
// loop is built of Scan and Cond), but no unexported declaration or
// method of another family: a primitive's files read as a unit, and a
// helper two of them need lives in graphs.go (ARCHITECTURE.md, "Adding
// a higher-order primitive").
var higherOrder = [][]string{
	{"cond.go"},
	{"scan.go"},
	{"while.go", "while_bounded.go"},
	{"checkpoint.go"},
	{"custom.go"},
	{"shardmap.go"},
	{"compile_call.go"},
}

// family returns the index of file's family in higherOrder, or -1.
func family(file string) int {
	for i, f := range higherOrder {
		if slices.Contains(f, file) {
			return i
		}
	}
	return -1
}

// TestHigherOrderFiles checks that no family of higherOrder refers to an
// unexported package-level declaration, or a method, of another family.
// With -v it prints the package's cross-file references, file by file:
//
//	go test ./internal/archtest -run HigherOrderFiles -v
func TestHigherOrderFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks package transforms")
	}
	refs, err := crossFileRefs(filepath.Join(root, "transforms"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range refs {
		total += len(r.names)
	}
	t.Logf("package transforms: %d references to another file's declarations (distinct names per pair of files), %d pairs of files", total, len(refs))
	for _, r := range refs {
		t.Logf("%s → %s: %s", r.from, r.to, strings.Join(r.names, ", "))
		from, to := family(r.from), family(r.to)
		if from < 0 || to < 0 || from == to {
			continue
		}
		var internal []string
		for _, n := range r.names {
			typ, name, isMethod := strings.Cut(n, ".")
			if !token.IsExported(typ) || (isMethod && !token.IsExported(name)) {
				internal = append(internal, n)
			}
		}
		if len(internal) > 0 {
			t.Errorf("%s uses %s of %s: a helper two higher-order primitives share belongs in graphs.go", r.from, strings.Join(internal, ", "), r.to)
		}
	}
}

// fileRef is the names file from uses that file to declares.
type fileRef struct {
	from, to string
	names    []string
}

// crossFileRefs type-checks the package in dir (non-test files, default
// build context) against its imports' export data (go list -export) and
// returns, for each ordered pair of its files, the package-level
// declarations and methods of one that the other uses.
func crossFileRefs(dir string) ([]fileRef, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export,GoFiles,Dir", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %v", err)
	}
	exports := map[string]string{}
	var self struct {
		ImportPath, Export, Dir string
		GoFiles                 []string
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath, Export, Dir string
			GoFiles                 []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		self = p // the package itself comes last
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range self.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(self.Dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		e, ok := exports[path]
		if !ok || e == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(e)
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check(self.ImportPath, fset, files, info)
	if err != nil {
		return nil, err
	}
	// declared reports the file declaring obj when it is a package-level
	// object or a method of this package.
	declared := func(obj types.Object) string {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			return ""
		}
		fn, isFunc := obj.(*types.Func)
		if obj.Parent() != pkg.Scope() && !(isFunc && fn.Signature().Recv() != nil) {
			return ""
		}
		return filepath.Base(fset.Position(obj.Pos()).Filename)
	}
	pairs := map[[2]string]map[string]bool{}
	add := func(at token.Pos, obj types.Object) {
		to := declared(obj)
		from := filepath.Base(fset.Position(at).Filename)
		if to == "" || to == from {
			return
		}
		k := [2]string{from, to}
		if pairs[k] == nil {
			pairs[k] = map[string]bool{}
		}
		name := obj.Name()
		if fn, ok := obj.(*types.Func); ok && fn.Signature().Recv() != nil {
			rt := fn.Signature().Recv().Type()
			if p, ok := rt.(*types.Pointer); ok {
				rt = p.Elem()
			}
			if n, ok := rt.(*types.Named); ok {
				name = n.Obj().Name() + "." + name
			}
		}
		pairs[k][name] = true
	}
	for id, obj := range info.Uses {
		add(id.Pos(), obj)
	}
	var refs []fileRef
	for k, names := range pairs {
		r := fileRef{from: k[0], to: k[1]}
		for n := range names {
			r.names = append(r.names, n)
		}
		sort.Strings(r.names)
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].from != refs[j].from {
			return refs[i].from < refs[j].from
		}
		return refs[i].to < refs[j].to
	})
	return refs, nil
}
