// Command mutate injects one-token bugs into peel's packages, one at a
// time, and reports the ones its tests do not notice.
//
// Usage:
//
//	go run ./internal/mutate [flags] PKG...
//
// For each package it lists the mutation sites of its non-test Go files
// (arithmetic + - * /, comparisons flipped or moved across their boundary,
// && and ||, ++ and --, += and -=, a unary minus or ! removed), keeps the
// ones on lines that the test run covers, shuffles them with -seed, and
// tries them until -budget runs out: each mutant is the package's file
// with one token changed, given to go test with -overlay (no copy of the
// module, the build cache reused), and the test packages (-tests) run
// one after another, the mutant's own package first, until one fails. A
// mutant some test fails on is killed; one every test passes is a
// survivor, printed with its file, line and change; one the tests run
// past their time on is timed out; one that does not build (a change the
// type check let through) is not viable. The kill rate is killed /
// (killed + survived).
//
// The command exits 0 whatever survives: survivors are for a developer to
// read, each either a missing test or an equivalent mutant. It exits 1
// when the tests fail without a mutant, or on a usage error.
//
// The operators are those of go-gremlins (arithmetic base, conditionals
// boundary and negation, increment/decrement, inverted negatives) and its
// optional inverted logical operators. peel runs its own command instead
// because gremlins tests a mutant with its own package's tests only (or
// the whole module, minutes per mutant), while most of what guards
// prims, autodiff and batching lives in transforms and the root package;
// and because it has no time budget or sampling.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	budget := flag.Duration("budget", 2*time.Minute, "time to spend trying mutants, over all packages")
	seed := flag.Uint64("seed", 1, "shuffles the mutation sites; the same seed and source try the same mutants in the same order")
	tests := flag.String("tests", "", "comma-separated test packages run against each mutant (default: the mutated packages), the mutant's own package first")
	max := flag.Int("n", 0, "try at most this many mutants per package (0: until the budget runs out)")
	list := flag.Bool("list", false, "list the covered mutation sites and exit")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./internal/mutate [flags] PKG...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		flag.Usage()
		os.Exit(1)
	}
	testPkgs := pkgs
	if *tests != "" {
		testPkgs = strings.Split(*tests, ",")
	}
	if err := run(pkgs, testPkgs, *budget, *seed, *max, *list); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

// pkgInfo is a package as go list describes it.
type pkgInfo struct {
	ImportPath string
	Dir        string
	GoFiles    []string
}

// mutant is one changed token.
type mutant struct {
	pkg       string // the import path
	file      string // absolute
	line, col int
	off       int    // byte offset of the token
	old, new  string // the token and its replacement ("" removes it)
	op        string // the operator class, gremlins' name
}

func (m mutant) String() string {
	rel := m.file
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, m.file); err == nil {
			rel = r
		}
	}
	to := m.new
	if to == "" {
		to = "(removed)"
	}
	return fmt.Sprintf("%s:%d:%d %s %s → %s", rel, m.line, m.col, m.op, m.old, to)
}

func run(pkgs, testPkgs []string, budget time.Duration, seed uint64, max int, list bool) error {
	if out, err := exec.Command("go", "list", "-m").Output(); err == nil {
		modulePath = strings.TrimSpace(string(out))
	}
	infos, err := goList(pkgs)
	if err != nil {
		return err
	}
	testInfos, err := goList(testPkgs)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mutate")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// One covered run of every test package: which lines the tests reach,
	// and how long each package's tests take (their timeout per mutant).
	fmt.Printf("mutate: coverage of %s by the tests of %s\n", strings.Join(pkgs, ", "), strings.Join(testPkgs, ", "))
	var paths []string
	for _, p := range infos {
		paths = append(paths, p.ImportPath)
	}
	profile := filepath.Join(tmp, "cover.out")
	args := []string{"test", "-count=1", "-coverpkg=" + strings.Join(paths, ","), "-coverprofile=" + profile}
	for _, p := range testInfos {
		args = append(args, p.ImportPath)
	}
	cmd := exec.Command("go", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("the tests fail without a mutant:\n%s", out)
	}
	durations := testDurations(out)
	covered, err := readProfile(profile)
	if err != nil {
		return err
	}

	// The sites of each package, covered ones only, shuffled.
	rng := rand.New(rand.NewPCG(seed, 0x6d757461))
	var queues [][]mutant
	total := 0
	for _, p := range infos {
		ms, err := sites(p)
		if err != nil {
			return err
		}
		// Shuffled before the uncovered sites are dropped, so the order
		// depends on the source and the seed only: other tests (a run
		// before and after a change) try the same mutants first.
		rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		var keep []mutant
		for _, m := range ms {
			if covered[coverKey{p.ImportPath + "/" + filepath.Base(m.file), m.line}] {
				keep = append(keep, m)
			}
		}
		fmt.Printf("mutate: %s: %d mutation sites, %d on covered lines\n", p.ImportPath, len(ms), len(keep))
		if max > 0 && len(keep) > max {
			keep = keep[:max]
		}
		queues = append(queues, keep)
		total += len(keep)
	}
	if list {
		for _, q := range queues {
			for _, m := range q {
				fmt.Println(m)
			}
		}
		return nil
	}

	// Round-robin over the packages until the budget runs out.
	start := time.Now()
	counts := map[string]int{}
	var survivors []mutant
	tried := 0
	for i := 0; tried < total && time.Since(start) < budget; i++ {
		q := queues[i%len(queues)]
		k := i / len(queues)
		if k >= len(q) {
			continue
		}
		m := q[k]
		tried++
		t0 := time.Now()
		status, by, err := try(m, testInfos, durations, tmp)
		if err != nil {
			return err
		}
		counts[status]++
		if status == "survived" {
			survivors = append(survivors, m)
		}
		if by != "" {
			by = " by " + by
		}
		fmt.Printf("%-10s %s (%.0fs%s)\n", status, m, time.Since(t0).Seconds(), by)
	}
	killed, lived := counts["killed"], counts["survived"]
	rate := 0.0
	if killed+lived > 0 {
		rate = 100 * float64(killed) / float64(killed+lived)
	}
	fmt.Printf("\nmutate: %d mutants tried of %d covered sites in %s (seed %d): %d killed, %d survived, %d timed out, %d not viable; kill rate %.0f%%\n",
		tried, total, time.Since(start).Round(time.Second), seed, killed, lived, counts["timed out"], counts["not viable"], rate)
	if len(survivors) > 0 {
		fmt.Println("survivors (a missing test, or a change that cannot alter a result):")
		for _, m := range survivors {
			fmt.Println("  " + m.String())
		}
	}
	return nil
}

// try runs the test packages against one mutant, its own package's
// tests first, and says what became of it and which package's tests
// killed it.
func try(m mutant, testInfos []pkgInfo, durations map[string]time.Duration, tmp string) (status, by string, err error) {
	src, err := os.ReadFile(m.file)
	if err != nil {
		return "", "", err
	}
	var buf bytes.Buffer
	buf.Write(src[:m.off])
	buf.WriteString(m.new)
	buf.Write(src[m.off+len(m.old):])
	mutated := filepath.Join(tmp, "mutant.go")
	if err := os.WriteFile(mutated, buf.Bytes(), 0o644); err != nil {
		return "", "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {m.file: mutated}})
	if err != nil {
		return "", "", err
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return "", "", err
	}
	order := make([]pkgInfo, 0, len(testInfos))
	for _, p := range testInfos {
		if p.ImportPath == m.pkg {
			order = append([]pkgInfo{p}, order...)
		} else {
			order = append(order, p)
		}
	}
	for _, p := range order {
		timeout := 3*durations[p.ImportPath] + 30*time.Second
		cmd := exec.Command("go", "test", "-count=1", "-failfast", "-overlay="+overlayFile,
			"-timeout="+timeout.String(), p.ImportPath)
		// A property test a mutant fails must not leave its failing case
		// in the source tree (rapid would replay it in every later run).
		cmd.Env = append(os.Environ(), "RAPID_NOFAILFILE=1")
		out, err := cmd.CombinedOutput()
		if err == nil {
			continue
		}
		switch {
		case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
			return "not viable", "", nil
		case bytes.Contains(out, []byte("panic: test timed out")):
			return "timed out", shortPath(p.ImportPath), nil
		case !failed.Match(out):
			// go test itself failed (no test ran): not the mutant's doing.
			return "", "", fmt.Errorf("go test %s failed without a failing test:\n%s", p.ImportPath, out)
		}
		return "killed", shortPath(p.ImportPath), nil
	}
	return "survived", "", nil
}

// modulePath is the main module's path, which shortPath trims.
var modulePath string

func shortPath(importPath string) string {
	if importPath == modulePath {
		return "."
	}
	if s, ok := strings.CutPrefix(importPath, modulePath+"/"); ok && modulePath != "" {
		return s
	}
	return importPath
}

func goList(pkgs []string) ([]pkgInfo, error) {
	args := append([]string{"list", "-json"}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v", strings.Join(pkgs, " "), err)
	}
	var infos []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		infos = append(infos, p)
	}
	return infos, nil
}

// failed matches go test's report of a failing test binary: a test that
// failed, a panic, or a FAIL line for the package.
var failed = regexp.MustCompile(`(?m)^(--- FAIL|FAIL\s|panic:|fatal error:)`)

var okLine = regexp.MustCompile(`^ok\s+(\S+)\s+([0-9.]+)s`)

// testDurations reads go test's "ok pkg 1.23s" lines.
func testDurations(out []byte) map[string]time.Duration {
	d := map[string]time.Duration{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := okLine.FindStringSubmatch(sc.Text()); m != nil {
			s, _ := strconv.ParseFloat(m[2], 64)
			d[m[1]] = time.Duration(s * float64(time.Second))
		}
	}
	return d
}

type coverKey struct {
	file string // import path / base name, as the profile names it
	line int
}

// readProfile returns the lines of blocks the tests ran at least once.
func readProfile(path string) (map[coverKey]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	covered := map[coverKey]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		// name.go:startLine.startCol,endLine.endCol numStmts count
		colon := strings.LastIndex(line, ":")
		fields := strings.Fields(line[colon+1:])
		if colon < 0 || len(fields) != 3 || fields[2] == "0" {
			continue
		}
		var l0, c0, l1, c1 int
		if _, err := fmt.Sscanf(fields[0], "%d.%d,%d.%d", &l0, &c0, &l1, &c1); err != nil {
			continue
		}
		for l := l0; l <= l1; l++ {
			covered[coverKey{line[:colon], l}] = true
		}
	}
	return covered, sc.Err()
}

// sites lists the mutation sites of a package's non-test files. The
// package is type-checked so arithmetic is mutated only on numbers (a +
// on strings has no -).
func sites(p pkgInfo) ([]mutant, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(error) {}}
	conf.Check(p.ImportPath, fset, files, info) // a partial check still types most expressions
	numeric := func(e ast.Expr) bool {
		tv, ok := info.Types[e]
		if !ok || tv.Type == nil {
			return false
		}
		b, ok := tv.Type.Underlying().(*types.Basic)
		return ok && b.Info()&types.IsNumeric != 0
	}
	constant := func(e ast.Expr) bool {
		tv, ok := info.Types[e]
		return ok && tv.Value != nil
	}
	var ms []mutant
	add := func(pos token.Pos, old, new, op string) {
		position := fset.Position(pos)
		ms = append(ms, mutant{pkg: p.ImportPath, file: position.Filename, line: position.Line, col: position.Column,
			off: position.Offset, old: old, new: new, op: op})
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GenDecl:
				// Constant and type declarations: array lengths and iota
				// arithmetic are not behaviour a test pins down line by line.
				return n.Tok == token.VAR
			case *ast.BinaryExpr:
				if constant(n) {
					return true // folded at compile time: often an array size
				}
				switch n.Op {
				case token.ADD, token.SUB, token.MUL, token.QUO:
					if numeric(n) {
						add(n.OpPos, n.Op.String(), arith[n.Op].String(), "ARITHMETIC_BASE")
					}
				case token.LSS, token.LEQ, token.GTR, token.GEQ:
					add(n.OpPos, n.Op.String(), boundary[n.Op].String(), "CONDITIONALS_BOUNDARY")
					add(n.OpPos, n.Op.String(), negation[n.Op].String(), "CONDITIONALS_NEGATION")
				case token.EQL, token.NEQ:
					add(n.OpPos, n.Op.String(), negation[n.Op].String(), "CONDITIONALS_NEGATION")
				case token.LAND, token.LOR:
					add(n.OpPos, n.Op.String(), logical[n.Op].String(), "INVERT_LOGICAL")
				}
			case *ast.IncDecStmt:
				other := token.DEC
				if n.Tok == token.DEC {
					other = token.INC
				}
				add(n.TokPos, n.Tok.String(), other.String(), "INCREMENT_DECREMENT")
			case *ast.AssignStmt:
				switch n.Tok {
				case token.ADD_ASSIGN, token.SUB_ASSIGN, token.MUL_ASSIGN, token.QUO_ASSIGN:
					if len(n.Lhs) == 1 && numeric(n.Lhs[0]) {
						add(n.TokPos, n.Tok.String(), arith[n.Tok].String(), "ARITHMETIC_BASE")
					}
				}
			case *ast.UnaryExpr:
				if (n.Op == token.SUB || n.Op == token.NOT) && !constant(n) {
					add(n.OpPos, n.Op.String(), "", "INVERT_NEGATIVES")
				}
			}
			return true
		})
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].file != ms[j].file {
			return ms[i].file < ms[j].file
		}
		return ms[i].off < ms[j].off
	})
	return ms, nil
}

var arith = map[token.Token]token.Token{
	token.ADD: token.SUB, token.SUB: token.ADD, token.MUL: token.QUO, token.QUO: token.MUL,
	token.ADD_ASSIGN: token.SUB_ASSIGN, token.SUB_ASSIGN: token.ADD_ASSIGN,
	token.MUL_ASSIGN: token.QUO_ASSIGN, token.QUO_ASSIGN: token.MUL_ASSIGN,
}

var boundary = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR,
}

var negation = map[token.Token]token.Token{
	token.LSS: token.GEQ, token.GEQ: token.LSS, token.GTR: token.LEQ, token.LEQ: token.GTR,
	token.EQL: token.NEQ, token.NEQ: token.EQL,
}

var logical = map[token.Token]token.Token{token.LAND: token.LOR, token.LOR: token.LAND}
