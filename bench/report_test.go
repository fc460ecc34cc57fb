package bench

import (
	"math"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func rec(name, impl string, threads int, median float64) Record {
	return Record{Workload: name, Impl: impl, Threads: threads, MedianNs: median,
		MinNs: median * 0.9, MaxNs: median * 1.2, Q1Ns: median * 0.95, Q3Ns: median * 1.05,
		Metric: median / 100, Unit: "ns/op", Allocs: 3, PeakHeap: 2048}
}

func failed(name, impl string, threads int, msg string) Record {
	return Record{Workload: name, Impl: impl, Threads: threads, Allocs: -1, Error: msg}
}

// sampleRecords has every kind of row: both sides, a reference the peer
// lacks, a failed peel side, a failed peer side, and a second thread
// count.
func sampleRecords() []Record {
	return []Record{
		rec("tiny", "peel", 1, 30e3), rec("tiny", "torch", 1, 120e3),
		rec("matmul", "peel", 1, 20e6), rec("matmul", "torch", 1, 2.5e6),
		rec("matmul_gonum", "gonum", 1, 19e6),
		failed("broken", "peel", 1, "broken: wrong result: element 3 = 1, want 2"),
		rec("broken", "torch", 1, 5e3),
		rec("odd", "peel", 1, 7e3), failed("odd", "torch", 1, "wrong result: a|b"),
		rec("tiny", "peel", 2, 31e3), rec("tiny", "torch", 2, 100e3),
	}
}

func TestPair(t *testing.T) {
	rows := Pair(sampleRecords(), "torch")
	var got []string
	for _, r := range rows {
		s := r.Workload + "/" + string(rune('0'+r.Threads))
		if r.Ours != nil {
			s += " ours=" + r.Ours.Impl
		}
		if r.Peer != nil {
			s += " peer"
		}
		got = append(got, s)
	}
	want := []string{
		"tiny/1 ours=peel peer", "matmul/1 ours=peel peer", "matmul_gonum/1 ours=gonum",
		"broken/1 ours=peel peer", "odd/1 ours=peel peer", "tiny/2 ours=peel peer",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Pair:\n got %q\nwant %q", got, want)
	}
	if r, ok := rows[0].Ratio(); !ok || math.Abs(r-0.25) > 1e-12 {
		t.Errorf("ratio = %v, %v; want 0.25", r, ok)
	}
	for _, i := range []int{2, 3, 4} {
		if _, ok := rows[i].Ratio(); ok {
			t.Errorf("row %s has a ratio", rows[i].Workload)
		}
	}
	if !HasPeer(rows) || HasPeer(Pair(sampleRecords()[:1], "torch")) {
		t.Error("HasPeer is wrong")
	}
}

func TestFormatRatio(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0.004567, "0.0046"}, {0.08, "0.08"}, {0.25, "0.25"}, {1, "1.00"}, {7.634, "7.63"}, {12.44, "12.4"}, {345.6, "346"}} {
		if got := FormatRatio(c.v); got != c.want {
			t.Errorf("FormatRatio(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestWriteMarkdown(t *testing.T) {
	var b strings.Builder
	m := Meta{Machine: "Test CPU, linux/amd64, 2 CPUs", Go: "go1.99", BLAS: "gonum", Peer: "torch 1.13.0",
		Command: "go run ./bench/cmd/peelbench -peer torch"}
	if err := WriteMarkdown(&b, Pair(sampleRecords(), "torch"), m); err != nil {
		t.Fatal(err)
	}
	want := "Test CPU, linux/amd64, 2 CPUs, go1.99, BLAS gonum, peer torch 1.13.0, command: `go run ./bench/cmd/peelbench -peer torch`\n" +
		"\n" +
		"| workload | peel median | torch median | peel / torch | threads | 2-thread speed-up |\n" +
		"| --- | ---: | ---: | ---: | ---: | ---: |\n" +
		"| tiny | 30µs | 120µs | 0.25 | 1 | - |\n" +
		"| matmul | 20ms | 2.5ms | 8.00 | 1 | - |\n" +
		"| matmul_gonum (gonum) | 19ms | — | — | 1 | - |\n" +
		"| broken | MISMATCH | 5µs | - | 1 | - |\n" +
		"| odd | 7µs | MISMATCH | - | 1 | - |\n" +
		"| tiny | 31µs | 100µs | 0.31 | 2 | 0.97× |\n" +
		"\n" +
		"MISMATCH: the result did not match the reference, so no time is reported:\n" +
		"\n" +
		"- broken (peel, 1 thread): broken: wrong result: element 3 = 1, want 2\n" +
		"- odd (torch, 1 thread): wrong result: a\\|b\n"
	if got := b.String(); got != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", got, want)
	}

	// Without a peer, the peer columns go.
	b.Reset()
	rs := []Record{rec("tiny", "peel", 1, 30e3), rec("copy", "go", 1, 150e3)}
	if err := WriteMarkdown(&b, Pair(rs, "torch"), Meta{}); err != nil {
		t.Fatal(err)
	}
	want = "| workload | peel median | threads |\n" +
		"| --- | ---: | ---: |\n" +
		"| tiny | 30µs | 1 |\n" +
		"| copy (go) | 150µs | 1 |\n"
	if got := b.String(); got != want {
		t.Errorf("markdown without a peer:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteComparison(t *testing.T) {
	var b strings.Builder
	if err := WriteComparison(&b, Pair(sampleRecords(), "torch"), "torch"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"torch", "0.25", "8.00", "—", "MISMATCH", "broken (peel, 1 thread): broken: wrong result", "odd (torch, 1 thread)"} {
		if !strings.Contains(out, s) {
			t.Errorf("comparison table lacks %q:\n%s", s, out)
		}
	}
	// Two-thread rows show their speed-up over the one-thread row of the
	// same workload and impl (30µs / 31µs); one-thread runs have no such
	// column.
	if !strings.Contains(out, SpeedUpHeader) || !strings.Contains(out, "0.97×") {
		t.Errorf("comparison table lacks the 2-thread speed-up:\n%s", out)
	}
	b.Reset()
	rs := []Record{rec("chain", "peel", 1, 3e6), rec("chain", "peel", 2, 2e6), rec("chain", "gonum", 2, 1e6), rec("solo", "peel", 2, 1e6)}
	if err := WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), SpeedUpHeader) || !strings.HasSuffix(strings.TrimSpace(lines[2]), "1.50×") ||
		!strings.HasSuffix(strings.TrimSpace(lines[3]), "-") || !strings.HasSuffix(strings.TrimSpace(lines[4]), "-") {
		t.Errorf("table's 2-thread speed-ups (want 1.50× for chain/peel only):\n%s", b.String())
	}
	// The collector's CPU share, where measured.
	b.Reset()
	withGC := rec("chain", "peel", 1, 3e6)
	withGC.GCPercent = 3.25
	if err := WriteTable(&b, []Record{withGC, rec("solo", "peel", 1, 1e6)}); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.Contains(lines[0], "GC CPU") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "3.2%") || !strings.HasSuffix(strings.TrimSpace(lines[2]), "-") {
		t.Errorf("table's GC CPU column (want 3.2%% for chain, - for solo):\n%s", b.String())
	}
	// The peak tensor memory, where measured (allocations measured too).
	b.Reset()
	withTensors := rec("chain", "peel", 1, 3e6)
	withTensors.Allocs, withTensors.PeakTensors = 12, 3<<20
	noTensors := rec("solo", "peel", 1, 1e6)
	noTensors.Allocs = -1
	if err := WriteTable(&b, []Record{withTensors, noTensors}); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.Contains(lines[0], "peak tensors") || !strings.Contains(lines[1], "3.0MiB") || strings.Contains(lines[2], "MiB") {
		t.Errorf("table's peak tensors column (want 3MiB for chain, - for solo):\n%s", b.String())
	}
	b.Reset()
	if err := WriteTable(&b, rs[:1]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), SpeedUpHeader) {
		t.Errorf("a one-thread table has the speed-up column:\n%s", b.String())
	}
	// The table without a peer shows failures too.
	b.Reset()
	if err := WriteTable(&b, []Record{failed("broken", "peel", 1, "boom")}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "MISMATCH") || !strings.Contains(b.String(), "boom") {
		t.Errorf("table without the failure:\n%s", b.String())
	}
}

func TestCompare(t *testing.T) {
	old := []Record{
		rec("same", "peel", 1, 100), rec("faster", "peel", 1, 100), rec("slower", "peel", 1, 100),
		rec("much_slower", "peel", 1, 100), rec("much_slower", "torch", 1, 100),
		rec("same", "peel", 2, 100), rec("broken", "peel", 1, 100),
		failed("fixed", "peel", 1, "bad"), rec("gone", "peel", 1, 100),
	}
	cur := []Record{
		rec("same", "peel", 1, 100), rec("faster", "peel", 1, 50), rec("slower", "peel", 1, 109),
		rec("much_slower", "peel", 1, 150), rec("much_slower", "torch", 1, 150),
		rec("same", "peel", 2, 200), failed("broken", "peel", 1, "wrong result"),
		rec("fixed", "peel", 1, 100), rec("new", "peel", 1, 100),
	}
	cs := Compare(old, cur, 1.10)
	type short struct {
		name      string
		impl      string
		threads   int
		status    string
		regressed bool
	}
	var got []short
	for _, c := range cs {
		got = append(got, short{c.Workload, c.Impl, c.Threads, c.Status, c.Regressed})
	}
	want := []short{
		{"same", "peel", 1, "", false},
		{"faster", "peel", 1, "", false},
		{"slower", "peel", 1, "", false},
		{"much_slower", "peel", 1, "", true},
		{"much_slower", "torch", 1, "", true},
		{"same", "peel", 2, "", true}, // matched on threads: 2 threads doubled
		{"broken", "peel", 1, "mismatch", true},
		{"fixed", "peel", 1, "fixed", false},
		{"new", "peel", 1, "new", false},
		{"gone", "peel", 1, "gone", false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Compare:\n got %v\nwant %v", got, want)
	}
	if r, ok := cs[3].Ratio(); !ok || r != 1.5 {
		t.Errorf("ratio = %v, %v; want 1.5", r, ok)
	}
	var names []string
	for _, o := range Offenders(cs, "torch") {
		names = append(names, o.Workload+"/"+o.Impl)
	}
	if want := []string{"much_slower/peel", "same/peel", "broken/peel"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Offenders = %v, want %v", names, want)
	}
	if off := Offenders(Compare(old, cur, 3), "torch"); len(off) != 1 || off[0].Workload != "broken" {
		t.Errorf("with threshold 3, offenders = %+v; want only the mismatch", off)
	}
	var b strings.Builder
	if err := WriteChanges(&b, cs); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"+50.0%", "-50.0%", "REGRESSED (mismatch)", "gone", "new"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("changes lack %q:\n%s", s, b.String())
		}
	}
}

func TestComparePanicsOnBadThreshold(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Compare accepted threshold 0")
		}
	}()
	Compare(nil, nil, 0)
}

func TestParsePeerRecord(t *testing.T) {
	r, err := ParsePeerRecord(`{"workload": "tiny_chain_100", "impl": "torch", "threads": 1, "median_ns": 110322.1, "min_ns": 109916.0, "max_ns": 110676.4, "metric": 1103.2, "unit": "ns/op", "allocs": -1, "q1_ns": 110119.0, "q3_ns": 110499.2, "reps": 3, "runs_per_sample": 301}`)
	if err != nil {
		t.Fatal(err)
	}
	want := Record{Workload: "tiny_chain_100", Impl: "torch", Threads: 1, MedianNs: 110322.1, MinNs: 109916.0,
		MaxNs: 110676.4, Metric: 1103.2, Unit: "ns/op", Allocs: -1, Q1Ns: 110119.0, Q3Ns: 110499.2, Reps: 3, RunsPerSample: 301}
	if r != want {
		t.Errorf("got %+v\nwant %+v", r, want)
	}
	r, err = ParsePeerRecord(`{"workload": "x", "impl": "torch", "threads": 1, "median_ns": 0, "allocs": -1, "error": "wrong result: element 0 = 1, want 2"}`)
	if err != nil || !r.Failed() || r.Error != "wrong result: element 0 = 1, want 2" {
		t.Errorf("failed record: %+v, %v", r, err)
	}
	for _, bad := range []string{`{"workload": "x"`, `{"impl": "torch", "median_ns": 1}`, `{"workload": "x", "impl": "torch"}`} {
		if _, err := ParsePeerRecord(bad); err == nil {
			t.Errorf("ParsePeerRecord(%s) succeeded", bad)
		}
	}
}

// TestPeerProtocolFake drives the Go side of the peer protocol with a
// shell script standing in for the peer: hello, one answer per request,
// a failure record, and a peer that dies.
func TestPeerProtocolFake(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script := `echo '{"peer": "fake", "version": "0", "threads": 1, "workloads": ["a", "b"]}'
while read -r line; do
  case "$line" in
  *'"a"'*) echo 'log line'; echo '{"workload": "a", "impl": "fake", "threads": 1, "median_ns": 5, "allocs": -1}' ;;
  *'"b"'*) echo '{"workload": "b", "impl": "fake", "threads": 1, "allocs": -1, "error": "wrong result: no"}' ;;
  *) exit 3 ;;
  esac
done`
	p, err := startPeer(exec.Command(sh, "-c", script), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Name != "fake" || p.Threads != 1 || !p.Has("a") || p.Has("c") {
		t.Fatalf("hello: %+v", p)
	}
	opt := Options{Reps: 1, MinTime: time.Millisecond, Threads: 1}
	if r, err := p.Measure("a", opt); err != nil || r.MedianNs != 5 || r.Failed() {
		t.Errorf("a: %+v, %v", r, err)
	}
	if r, err := p.Measure("b", opt); err != nil || !r.Failed() {
		t.Errorf("b: %+v, %v", r, err)
	}
	if _, err := p.Measure("c", opt); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("a dead peer answered: %v", err)
	}
	if _, err := p.Measure("a", opt); err == nil {
		t.Error("a failed peer answered again")
	}
}

// TestPeerProtocolTorch runs the real torch peer on the tiny chain with
// a tiny budget, when python3 with torch is installed.
func TestPeerProtocolTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	python, version, err := FindPython("")
	if err != nil {
		t.Skip(err)
	}
	p, err := StartTorch(python, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Name != "torch" || p.Threads != 1 || !strings.HasPrefix(version, p.Version[:1]) {
		t.Errorf("hello: %+v (version %s)", p, version)
	}
	for _, w := range Workloads() {
		if w.Impl == "peel" && !p.Has(w.Name) {
			t.Logf("the torch peer lacks %s", w.Name)
		}
	}
	r, err := p.Measure("tiny_chain_100", Options{Reps: 2, MinTime: 20 * time.Millisecond, Warmup: 5 * time.Millisecond, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed() || r.Workload != "tiny_chain_100" || r.Impl != "torch" || r.Threads != 1 ||
		!(r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs) || r.Reps != 2 || r.Unit != "ns/op" {
		t.Errorf("record: %+v", r)
	}
	// The compiled workloads are compared with torch eager, and the two
	// training steps run in the peer too.
	for _, w := range Workloads() {
		if (strings.HasSuffix(w.Name, "_compiled") || w.Name == "mlp_step_f32" || w.Name == "maml_step") && !p.Has(w.Name) {
			t.Errorf("the torch peer lacks %s", w.Name)
		}
	}
	for _, w := range Workloads() {
		if w.Name != "mlp_step_f32_compiled" && w.Name != "maml_step" {
			continue
		}
		r, err := p.Measure(w.Name, Options{Reps: 2, MinTime: 20 * time.Millisecond, Warmup: 5 * time.Millisecond, Threads: 1})
		if err != nil || r.Failed() || r.Unit != w.Unit {
			t.Errorf("%s: %+v, %v", w.Name, r, err)
		}
	}
	r, err = p.Measure("no_such_workload", Options{Reps: 1, Threads: 1})
	if err != nil || !r.Failed() {
		t.Errorf("unknown workload: %+v, %v", r, err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestFindPythonMissing(t *testing.T) {
	_, _, err := FindPython(filepath.Join(t.TempDir(), "python3"))
	if err == nil || !strings.Contains(err.Error(), TorchInstallHint) {
		t.Errorf("error %v does not say how to install torch", err)
	}
}
