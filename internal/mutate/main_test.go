package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSites: the mutation sites of a small file: arithmetic on numbers
// but not on strings or in constants, comparisons both ways, logic,
// ++, +=, unary minus and !, each at its token's place.
func TestSites(t *testing.T) {
	dir := t.TempDir()
	src := `package p

const k = 2 * 3

func f(a, b int, s string, ok bool) (int, string, bool) {
	c := a + b
	s = s + "x"
	if a < b && !ok {
		c++
	}
	c += -a
	return c * k, s, a == b
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := sites(pkgInfo{ImportPath: "example.com/p", Dir: dir, GoFiles: []string{"p.go"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		if src[m.off:m.off+len(m.old)] != m.old {
			t.Fatalf("%v: the source at offset %d is not %q", m, m.off, m.old)
		}
		got = append(got, m.old+"→"+m.new)
	}
	want := []string{
		"+→-",          // a + b (ints); s + "x" is a string, 2 * 3 a constant
		"<→<=", "<→>=", // a < b
		"&&→||", // &&
		"!→",    // !ok
		"++→--", // c++
		"+=→-=", // c += …
		"-→",    // -a
		"*→/",   // c * k
		"==→!=", // a == b
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sites %q, want %q", got, want)
	}
}

// TestReadProfile: the lines of covered blocks, and none of blocks run
// zero times.
func TestReadProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cover.out")
	prof := "mode: set\nexample.com/p/p.go:3.10,5.2 2 1\nexample.com/p/p.go:7.1,8.3 1 0\n"
	if err := os.WriteFile(path, []byte(prof), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := readProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[int]bool{3: true, 4: true, 5: true, 6: false, 7: false, 8: false} {
		if got := c[coverKey{"example.com/p/p.go", line}]; got != want {
			t.Errorf("line %d covered %v, want %v", line, got, want)
		}
	}
}
