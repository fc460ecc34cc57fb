package archtest

import (
	"slices"
	"strings"
	"testing"
)

// The checks themselves, on a made-up module and document.

const fakeDoc = "# map\n\n" +
	"| path | what lives there | imports |\n" +
	"| --- | --- | --- |\n" +
	"| `base/` | the bottom (no `peel` here) | — |\n" +
	"| root `peel` | the API | `base`, gonum |\n" +
	"| `ex/{a,b}` | examples | `peel` (and `base` in tests) |\n" +
	"| `lib` | a library: `x \\| y` | `peel`, `base`, `gone` |\n" +
	"\n" +
	"**Layering.** Lowest first:\n" +
	"\n" +
	"1. `base` (nothing)\n" +
	"2. `peel`,\n" +
	"   `lib`\n" +
	"3. `ex/*`\n" +
	"\n" +
	"Text after the list, `notalevel`.\n" +
	"4. `not` a level either\n"

var fakeGraph = graph{
	"base": {},
	"peel": {"base"},
	"ex/a": {"peel"},
	"ex/b": {"peel", "lib"},
	"lib":  {"peel"},
	"tool": {"ex/a"},
}

func TestParseTable(t *testing.T) {
	rows, err := parseTable(fakeDoc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join(r.paths, ",")+":"+strings.Join(r.imports, ","))
	}
	want := []string{"base:", "peel:base", "ex/a,ex/b:peel", "lib:peel,base,gone"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}

func TestCheckTable(t *testing.T) {
	rows, err := parseTable(fakeDoc)
	if err != nil {
		t.Fatal(err)
	}
	probs := strings.Join(checkTable(fakeGraph, rows), "\n")
	for _, want := range []string{
		"the imports name `gone`, which is not a package",
		"package ex/b imports `lib`, `peel`; the row says `peel` (missing: `lib`; not imported: none)",
		"package lib imports `peel`; the row says `base`, `gone`, `peel` (missing: none; not imported: `base`)",
		"no row for package tool; add:\n| `tool` | … | `ex/a` |",
	} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems\n%s\nlack %q", probs, want)
		}
	}
	if strings.Contains(probs, "package peel") || strings.Contains(probs, "package base") || strings.Contains(probs, "package ex/a") {
		t.Errorf("problems\n%s\nname a correct row", probs)
	}
}

func TestCheckLayering(t *testing.T) {
	levels, err := parseLayering(fakeDoc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, lv := range levels {
		got = append(got, strings.Join(lv.patterns, ","))
	}
	if want := []string{"base", "peel,lib", "ex/*"}; !slices.Equal(got, want) {
		t.Fatalf("levels %q, want %q", got, want)
	}
	probs := strings.Join(checkLayering(fakeGraph, levels), "\n")
	for _, want := range []string{
		"package lib (level 2) imports peel (level 2)",
		"package tool has no level",
	} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems\n%s\nlack %q", probs, want)
		}
	}
	if strings.Contains(probs, "ex/b") {
		t.Errorf("problems\n%s\nname ex/b, which imports only lower levels", probs)
	}
}

func TestClosure(t *testing.T) {
	if got := path(fakeGraph, "tool", "base"); !slices.Equal(got, []string{"tool", "ex/a", "peel", "base"}) {
		t.Errorf("path %q", got)
	}
	if c := closure(fakeGraph, "ex/b"); !c["base"] || !c["lib"] || c["tool"] {
		t.Errorf("closure %v", c)
	}
}
