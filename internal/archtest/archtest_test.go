package archtest

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module's directory: this package is internal/archtest.
var root = filepath.Join("..", "..")

// The document's names of packages: "peel" for the root package,
// otherwise the package's directory in the module ("backend/cpu").

// graph maps each package of the module to the packages of the module
// it imports (non-test files only).
type graph map[string][]string

// TestPackageTable checks ARCHITECTURE.md's package table against the
// real imports: every package has one row, and a row's imports column
// names exactly the module's packages it imports.
func TestPackageTable(t *testing.T) {
	g := loadGraph(t)
	rows, err := parseTable(readDoc(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkTable(g, rows) {
		t.Error(p)
	}
}

// TestLayering checks that no package imports one on its own level of
// ARCHITECTURE.md's layering or above it.
func TestLayering(t *testing.T) {
	g := loadGraph(t)
	levels, err := parseLayering(readDoc(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkLayering(g, levels) {
		t.Error(p)
	}
}

// forbidden lists, for a package, what the closure of its imports (go
// list -deps) must not hold.
var forbidden = []struct {
	pkg string
	not []string
}{
	// The layers need only the array API: a model's code pulls in no
	// transform or interpreter.
	{"nn", []string{"transforms", "batching", "functionalize", "compiler", "autodiff"}},
	// The compiler works on graphs: neither the array API nor
	// user-defined ops.
	{"compiler", []string{"peel", "customop"}},
	// The array API is usable without any transform.
	{"peel", []string{"batching", "functionalize", "autodiff", "compiler", "customop", "transforms"}},
}

// TestClosures checks the dependency closures the document promises.
func TestClosures(t *testing.T) {
	g := loadGraph(t)
	for _, f := range forbidden {
		if _, ok := g[f.pkg]; !ok {
			t.Errorf("%s is not a package of the module", f.pkg)
			continue
		}
		deps := closure(g, f.pkg)
		for _, n := range f.not {
			if deps[n] {
				t.Errorf("%s depends on %s (through %s); it must not", f.pkg, n, strings.Join(path(g, f.pkg, n), " → "))
			}
		}
	}
}

func readDoc(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// loadGraph reads every package of the module with go/build in the
// default context.
func loadGraph(t *testing.T) graph {
	t.Helper()
	mod := modulePath(t)
	g := graph{}
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if dir != root {
			if n := d.Name(); strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		p, err := build.Default.ImportDir(dir, 0)
		if err != nil {
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil
			}
			return err
		}
		if len(p.GoFiles)+len(p.CgoFiles) == 0 {
			return nil // tests only: nothing imports it
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return err
		}
		imps := []string{}
		for _, imp := range p.Imports {
			if imp == mod {
				imps = append(imps, "peel")
			} else if rest, ok := strings.CutPrefix(imp, mod+"/"); ok {
				imps = append(imps, rest)
			}
		}
		g[docName(filepath.ToSlash(rel))] = imps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"peel", "interp", "backend"} {
		if _, ok := g[p]; !ok {
			t.Fatalf("found no package %s under %s: the walk is broken (found %d packages)", p, root, len(g))
		}
	}
	return g
}

func docName(rel string) string {
	if rel == "." || rel == "" {
		return "peel"
	}
	return rel
}

func modulePath(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}

// row is one row of the package table.
type row struct {
	line    int
	paths   []string
	imports []string
}

// parseTable returns the rows of the first table whose header has a
// "path" and an "imports" column. In both columns the names in
// backquotes outside parentheses count: a path may have a trailing
// slash or a brace list (`examples/{a,b}`), "`peel`" is the root
// package, and anything else (remarks, modules outside peel such as
// gonum) is written without backquotes or in parentheses. "—" or "none"
// is no import.
func parseTable(doc string) ([]row, error) {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "|") {
			continue
		}
		pathCol, impCol := -1, -1
		for k, c := range splitCells(l) {
			switch strings.ToLower(strings.TrimSpace(c)) {
			case "path":
				pathCol = k
			case "imports":
				impCol = k
			}
		}
		if pathCol < 0 || impCol < 0 {
			continue
		}
		var rows []row
		for j := i + 2; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "|"); j++ {
			cells := splitCells(lines[j])
			if len(cells) <= max(pathCol, impCol) {
				return nil, fmt.Errorf("ARCHITECTURE.md:%d: the row has %d cells, want the path in cell %d and the imports in cell %d", j+1, len(cells), pathCol+1, impCol+1)
			}
			r := row{line: j + 1, paths: names(cells[pathCol]), imports: names(cells[impCol])}
			if len(r.paths) == 0 {
				return nil, fmt.Errorf("ARCHITECTURE.md:%d: the path cell %q names no package in backquotes", j+1, strings.TrimSpace(cells[pathCol]))
			}
			rows = append(rows, r)
		}
		return rows, nil
	}
	return nil, errors.New(`ARCHITECTURE.md has no table with a "path" and an "imports" column`)
}

// splitCells splits a table line into its cells, at bars outside code
// spans that are not escaped.
func splitCells(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	if strings.HasSuffix(l, "|") && !strings.HasSuffix(l, `\|`) {
		l = l[:len(l)-1]
	}
	var cells []string
	var b strings.Builder
	code := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == '`':
			code = !code
		case c == '|' && !code && (i == 0 || l[i-1] != '\\'):
			cells = append(cells, b.String())
			b.Reset()
			continue
		}
		b.WriteByte(c)
	}
	return append(cells, b.String())
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// names returns the package names a cell or list item states: its code
// spans outside parentheses, brace lists expanded, trailing slashes
// dropped.
func names(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(stripParens(cell), -1) {
		for _, n := range expand(strings.TrimSpace(m[1])) {
			n = strings.TrimSuffix(strings.TrimPrefix(n, "./"), "/")
			if n != "" && n != "—" && n != "none" {
				out = append(out, n)
			}
		}
	}
	return out
}

// stripParens drops the text inside parentheses outside code spans.
func stripParens(s string) string {
	var b strings.Builder
	depth, code := 0, false
	for _, c := range s {
		switch {
		case c == '`':
			code = !code
		case c == '(' && !code:
			depth++
			continue
		case c == ')' && !code && depth > 0:
			depth--
			continue
		}
		if depth == 0 {
			b.WriteRune(c)
		}
	}
	return b.String()
}

var braces = regexp.MustCompile(`^(.*)\{([^{}]*)\}(.*)$`)

// expand expands one brace list: "a/{b,c}" is "a/b" and "a/c".
func expand(s string) []string {
	m := braces.FindStringSubmatch(s)
	if m == nil {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(m[2], ",") {
		out = append(out, expand(m[1]+strings.TrimSpace(alt)+m[3])...)
	}
	return out
}

// checkTable returns what is wrong with the table: rows naming no
// package, packages with no row or two, and rows whose imports differ
// from the package's.
func checkTable(g graph, rows []row) []string {
	var probs []string
	rowOf := map[string]row{}
	for _, r := range rows {
		for _, p := range r.paths {
			if _, ok := g[p]; !ok {
				probs = append(probs, fmt.Sprintf("ARCHITECTURE.md:%d: `%s` is not a package of the module (a stale row?)", r.line, p))
				continue
			}
			if prev, ok := rowOf[p]; ok {
				probs = append(probs, fmt.Sprintf("ARCHITECTURE.md:%d: `%s` has a row already, at line %d", r.line, p, prev.line))
				continue
			}
			rowOf[p] = r
		}
		for _, p := range r.imports {
			if _, ok := g[p]; !ok {
				probs = append(probs, fmt.Sprintf("ARCHITECTURE.md:%d: the imports name `%s`, which is not a package of the module (write remarks and other modules without backquotes, or in parentheses)", r.line, p))
			}
		}
	}
	for _, p := range sortedKeys(g) {
		imps := g[p]
		r, ok := rowOf[p]
		if !ok {
			probs = append(probs, fmt.Sprintf("ARCHITECTURE.md has no row for package %s; add:\n| `%s` | … | %s |", p, p, codeList(imps)))
			continue
		}
		want := set(imps)
		said := set(r.imports)
		var add, drop []string
		for n := range want {
			if !said[n] {
				add = append(add, n)
			}
		}
		for n := range said {
			if _, known := g[n]; known && !want[n] {
				drop = append(drop, n)
			}
		}
		if len(add)+len(drop) > 0 {
			slices.Sort(add)
			slices.Sort(drop)
			probs = append(probs, fmt.Sprintf("ARCHITECTURE.md:%d: package %s imports %s; the row says %s (missing: %s; not imported: %s)",
				r.line, p, codeList(imps), codeList(r.imports), codeList(add), codeList(drop)))
		}
	}
	return probs
}

// level is one level of the layering: its number and the patterns of
// the packages on it.
type level struct {
	n        int
	line     int
	patterns []string
}

var item = regexp.MustCompile(`^\s*(\d+)\.\s+(.*)$`)

// parseLayering returns the levels of the numbered list that follows
// the paragraph starting "**Layering.**", lowest first. An item names
// its packages in backquotes outside parentheses; "`x/*`" is every
// package below x not named more precisely, and "`peel`" the root
// package.
func parseLayering(doc string) ([]level, error) {
	lines := strings.Split(doc, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "**Layering.**") })
	if start < 0 {
		return nil, errors.New(`ARCHITECTURE.md has no paragraph starting "**Layering.**"`)
	}
	var levels []level
	var text []string
	flush := func() {
		if len(levels) > 0 {
			levels[len(levels)-1].patterns = names(strings.Join(text, " "))
		}
		text = nil
	}
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if m := item.FindStringSubmatch(l); m != nil {
			flush()
			n, _ := strconv.Atoi(m[1])
			levels = append(levels, level{n: n, line: i + 1})
			text = []string{m[2]}
			continue
		}
		if len(levels) == 0 {
			continue // the paragraph before the list
		}
		if strings.TrimSpace(l) == "" {
			if i+1 < len(lines) && item.MatchString(lines[i+1]) {
				continue
			}
			break
		}
		if !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			break
		}
		text = append(text, l)
	}
	flush()
	if len(levels) == 0 {
		return nil, errors.New("ARCHITECTURE.md's Layering paragraph is followed by no numbered list")
	}
	for k, lv := range levels {
		if lv.n != k+1 {
			return nil, fmt.Errorf("ARCHITECTURE.md:%d: level %d is numbered %d", lv.line, k+1, lv.n)
		}
		if len(lv.patterns) == 0 {
			return nil, fmt.Errorf("ARCHITECTURE.md:%d: level %d names no package in backquotes", lv.line, lv.n)
		}
	}
	return levels, nil
}

// checkLayering returns the packages with no level and the imports that
// do not point to a lower level.
func checkLayering(g graph, levels []level) []string {
	var probs []string
	exact := map[string]int{}
	globs := map[string]int{}
	used := map[string]bool{}
	for _, lv := range levels {
		for _, p := range lv.patterns {
			m, key := exact, p
			if prefix, ok := strings.CutSuffix(p, "/*"); ok {
				m, key = globs, prefix
			}
			if prev, ok := m[key]; ok {
				probs = append(probs, fmt.Sprintf("ARCHITECTURE.md:%d: `%s` is on level %d already", lv.line, p, prev))
				continue
			}
			m[key] = lv.n
		}
	}
	levelOf := func(p string) (int, bool) {
		if n, ok := exact[p]; ok {
			used[p] = true
			return n, true
		}
		best := ""
		for prefix := range globs {
			if strings.HasPrefix(p, prefix+"/") && len(prefix) > len(best) {
				best = prefix
			}
		}
		if best == "" {
			return 0, false
		}
		used[best+"/*"] = true
		return globs[best], true
	}
	for _, p := range sortedKeys(g) {
		la, ok := levelOf(p)
		if !ok {
			probs = append(probs, fmt.Sprintf("package %s has no level in ARCHITECTURE.md's Layering list", p))
			continue
		}
		for _, q := range g[p] {
			if lb, ok := levelOf(q); ok && lb >= la {
				probs = append(probs, fmt.Sprintf("package %s (level %d) imports %s (level %d): a package may import only packages on lower levels", p, la, q, lb))
			}
		}
	}
	for _, lv := range levels {
		for _, p := range lv.patterns {
			if !used[p] {
				probs = append(probs, fmt.Sprintf("ARCHITECTURE.md:%d: level %d names `%s`, which matches no package of the module", lv.line, lv.n, p))
			}
		}
	}
	return probs
}

// closure returns the packages p depends on, directly or not.
func closure(g graph, p string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, q := range g[p] {
			if !seen[q] {
				seen[q] = true
				walk(q)
			}
		}
	}
	walk(p)
	return seen
}

// path returns a shortest chain of imports from p to q, or nil.
func path(g graph, p, q string) []string {
	prev := map[string]string{p: ""}
	queue := []string{p}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		for _, b := range g[a] {
			if _, ok := prev[b]; ok {
				continue
			}
			prev[b] = a
			if b == q {
				var chain []string
				for n := q; n != ""; n = prev[n] {
					chain = append(chain, n)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, b)
		}
	}
	return nil
}

func set(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func sortedKeys(g graph) []string {
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// codeList writes names as the table does: "`a`, `b`", or "none".
func codeList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return "`" + strings.Join(s, "`, `") + "`"
}
