package transforms_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/peel-ml/peel/interp"

	// Every package that creates primitives, linked in so that the
	// registry holds all of them (transforms imports autodiff,
	// customop, compiler and prims itself).
	_ "github.com/peel-ml/peel/autodiff"
	_ "github.com/peel-ml/peel/compiler"
	_ "github.com/peel-ml/peel/customop"
	_ "github.com/peel-ml/peel/data"
	_ "github.com/peel-ml/peel/dist/ddp"
	_ "github.com/peel-ml/peel/linalg"
	_ "github.com/peel-ml/peel/nn"
	_ "github.com/peel-ml/peel/optim"
	_ "github.com/peel-ml/peel/prims"
	_ "github.com/peel-ml/peel/tree"
)

const modulePath = "github.com/peel-ml/peel"

// localPrim is a row of ARCHITECTURE.md's table of transform-local
// primitives.
type localPrim struct {
	name, file string
}

// readLocalPrims parses the table of section "Transform-local
// primitives" of ARCHITECTURE.md.
func readLocalPrims(t *testing.T) []localPrim {
	t.Helper()
	doc, err := os.ReadFile("../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "\n## Transform-local primitives\n")
	if start < 0 {
		t.Fatal(`ARCHITECTURE.md has no section "Transform-local primitives"`)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| `([^`]+)` \\| [^|]+ \\|$")
	var rows []localPrim
	for _, line := range strings.Split(section, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			rows = append(rows, localPrim{name: m[1], file: m[2]})
		} else if strings.HasPrefix(line, "| `") {
			t.Errorf("ARCHITECTURE.md: transform-local primitives: row %q is not | `name` | `package/file.go` | why |", line)
		}
	}
	if len(rows) == 0 {
		t.Fatal("ARCHITECTURE.md: the table of transform-local primitives has no rows")
	}
	return rows
}

// creatingPackages returns the import paths of the packages whose
// non-test Go files call interp.NewPrim, outside prims and interp.
func creatingPackages(t *testing.T) map[string]bool {
	t.Helper()
	pkgs := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != ".." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(src), "interp.NewPrim(") {
			return nil
		}
		dir, _ := filepath.Rel("..", filepath.Dir(path))
		pkgs[modulePath+"/"+filepath.ToSlash(dir)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestTransformLocalPrimitives checks ARCHITECTURE.md's claim that
// prims holds every primitive but those its table of transform-local
// primitives lists (and user-defined ops, which customop registers):
// every registered primitive created outside prims and customop has a
// row naming the file that creates it, every row names a primitive that
// exists and is created there, and every package whose code creates
// primitives is linked into this test.
func TestTransformLocalPrimitives(t *testing.T) {
	const primsPkg, customopPkg = modulePath + "/prims", modulePath + "/customop"
	rows := readLocalPrims(t)
	table := map[string]localPrim{}
	for _, r := range rows {
		if _, dup := table[r.name]; dup {
			t.Errorf("ARCHITECTURE.md: transform-local primitive %s is listed twice", r.name)
		}
		table[r.name] = r
	}
	creators := map[string]bool{}
	registered := map[string]*interp.Prim{}
	for _, p := range interp.Prims() {
		pkg := p.Package()
		creators[pkg] = true
		registered[p.Name] = p
		switch {
		case pkg == "":
			t.Errorf("primitive %s: the package that created it is not known", p.Name)
		case pkg == primsPkg || pkg == customopPkg || strings.HasSuffix(pkg, "_test"):
			// peel's primitive set; user-defined ops; this test binary's own.
			if _, listed := table[p.Name]; listed {
				t.Errorf("primitive %s is created in %s, but ARCHITECTURE.md lists it as transform-local", p.Name, pkg)
			}
		default:
			if _, listed := table[p.Name]; !listed {
				t.Errorf("primitive %s is created in %s, outside prims/, but ARCHITECTURE.md's table of transform-local primitives does not list it", p.Name, pkg)
			}
		}
	}
	for _, r := range rows {
		p := registered[r.name]
		if p == nil {
			t.Errorf("ARCHITECTURE.md lists transform-local primitive %s, but no primitive of that name is registered", r.name)
			continue
		}
		if dir := modulePath + "/" + filepath.ToSlash(filepath.Dir(r.file)); p.Package() != dir {
			t.Errorf("ARCHITECTURE.md: primitive %s is listed in %s, but package %s creates it", r.name, r.file, p.Package())
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(r.file)))
		if err != nil {
			t.Errorf("ARCHITECTURE.md: primitive %s: %v", r.name, err)
		} else if !strings.Contains(string(src), `interp.NewPrim("`+r.name+`"`) {
			t.Errorf("ARCHITECTURE.md: primitive %s is not created in %s", r.name, r.file)
		}
	}
	for pkg := range creatingPackages(t) {
		if pkg != customopPkg && !creators[pkg] {
			t.Errorf("package %s creates primitives but none is registered here: import it in this test", pkg)
		}
	}
}
