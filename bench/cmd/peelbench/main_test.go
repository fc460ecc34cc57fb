package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peel-ml/peel/bench"
)

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"-threads":         "-threads",
		"1,2":              "1,2",
		"/tmp/out.md":      "/tmp/out.md",
		"tiny|matmul":      "'tiny|matmul'",
		"a b":              "'a b'",
		"it's":             `'it'\''s'`,
		"":                 "''",
		"tiny_chain_100$":  "'tiny_chain_100$'",
		"-mintime=200ms":   "-mintime=200ms",
		"matmul512_f32.*x": "'matmul512_f32.*x'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParseThreads(t *testing.T) {
	if got, err := parseThreads("1, 2,4"); err != nil || len(got) != 3 || got[2] != 4 {
		t.Errorf("parseThreads = %v, %v", got, err)
	}
	for _, bad := range []string{"0", "a", "1,,2", "-1"} {
		if _, err := parseThreads(bad); err == nil {
			t.Errorf("parseThreads(%q) succeeded", bad)
		}
	}
}

func writeRecs(t *testing.T, path string, rs ...bench.Record) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.WriteRecords(f, rs); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestReportStatus runs the reporting half (-from, -compare, -md) on
// saved records and checks the exit statuses: 0, 2 for a regression, 1
// for a mismatch.
func TestReportStatus(t *testing.T) {
	dir := t.TempDir()
	r := func(impl string, ns float64) bench.Record {
		return bench.Record{Workload: "tiny", Impl: impl, Threads: 1, MedianNs: ns, MinNs: ns, MaxNs: ns, Allocs: -1}
	}
	base, slow, bad := filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "slow.jsonl"), filepath.Join(dir, "bad.jsonl")
	writeRecs(t, base, r("peel", 100), r("torch", 400))
	writeRecs(t, slow, r("peel", 150), r("torch", 400))
	writeRecs(t, bad, bench.Record{Workload: "tiny", Impl: "peel", Threads: 1, Error: "wrong result"}, r("torch", 400))
	md := filepath.Join(dir, "out.md")

	for _, c := range []struct {
		from, compare string
		want          int
	}{
		{base, "", 0},
		{base, base, 0},
		{slow, base, exitRegressed},
		{base, slow, 0},
		{bad, "", exitFailed},
		{bad, base, exitFailed},
	} {
		status, err := run(config{from: c.from, compare: c.compare, threshold: 1.1, mdOut: md})
		if status != c.want {
			t.Errorf("-from %s -compare %s: status %d (%v), want %d", filepath.Base(c.from), c.compare, status, err, c.want)
		}
		if (status != 0) != (err != nil) {
			t.Errorf("-from %s: status %d with error %v", filepath.Base(c.from), status, err)
		}
	}
	out, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "| tiny | MISMATCH | 400ns | - | 1 |") {
		t.Errorf("markdown of the failed run:\n%s", out)
	}
}
