package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Record is one measurement as the harness and the peer scripts write
// it: a JSON object per line. Fields after Allocs are optional (a peer
// may not measure them). A record whose Error is set carries no timing:
// the workload's result did not match its reference (or it failed to
// run), and the harness reports it as a mismatch instead of a time.
type Record struct {
	Workload string  `json:"workload"`
	Impl     string  `json:"impl"`
	Threads  int     `json:"threads"`
	MedianNs float64 `json:"median_ns"`
	MinNs    float64 `json:"min_ns"`
	MaxNs    float64 `json:"max_ns"`
	// Metric is the workload's derived metric at the median, in Unit
	// ("ns/op", "ns/elem/op", "GFLOPS", "ns/elem").
	Metric float64 `json:"metric"`
	Unit   string  `json:"unit,omitempty"`
	// Allocs is heap allocations per run; -1 when not measured.
	Allocs   float64 `json:"allocs"`
	Q1Ns     float64 `json:"q1_ns,omitempty"`
	Q3Ns     float64 `json:"q3_ns,omitempty"`
	Bytes    float64 `json:"bytes,omitempty"`
	PeakHeap uint64  `json:"peak_heap_bytes,omitempty"`
	LivePeak uint64  `json:"live_peak_bytes,omitempty"`
	// PeakTensors is the growth of the caching allocator's peak of
	// bytes in use over one run (peel.MemoryStats after
	// peel.ResetPeakMemory): the most memory the run's results of 4 KiB
	// and more took at once, those awaiting collection included.
	PeakTensors int64 `json:"peak_tensor_bytes,omitempty"`
	// GCPercent is the collector's share of the busy CPU time while the
	// samples ran, in percent (0 or absent in records from before it
	// was measured, and for peers; -1 when the runtime did not say).
	GCPercent float64 `json:"gc_cpu_pct,omitempty"`
	// Roof names the machine's limit the workload is measured against
	// ("peak f32", "peak f64", "bandwidth"), RoofRate is that limit at
	// Threads (GFLOPS or GB/s, cpu.MeasureLimits) and PctRoof the
	// median's rate as a percentage of it (see Roof); absent for
	// workloads bound by neither.
	Roof          string  `json:"roof,omitempty"`
	RoofRate      float64 `json:"roof_rate,omitempty"`
	PctRoof       float64 `json:"pct_roof,omitempty"`
	Reps          int     `json:"reps,omitempty"`
	RunsPerSample int     `json:"runs_per_sample,omitempty"`
	// Error says why the workload was not timed: its check failed ("wrong
	// result: …"), it panicked, or the peer could not run it.
	Error string `json:"error,omitempty"`
	// Breakdown is where the run's time went (peelbench -profile), for
	// peel's records.
	Breakdown *Breakdown `json:"breakdown,omitempty"`
}

// Failed reports whether r carries an error instead of a timing.
func (r Record) Failed() bool { return r.Error != "" }

// FailedRecord is the record of a workload whose check or run failed:
// it names the workload and carries err instead of a timing.
func FailedRecord(w Workload, threads int, err error) Record {
	return Record{Workload: w.Name, Impl: w.Impl, Threads: threads, Allocs: -1, Error: err.Error()}
}

// WriteRecords writes rs as JSON, one object per line.
func WriteRecords(w io.Writer, rs []Record) error {
	enc := json.NewEncoder(w)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// ReadRecords reads JSON records, one object per line; blank lines and
// lines that do not start with '{' (a peer's log output) are skipped.
func ReadRecords(r io.Reader) ([]Record, error) {
	var rs []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(s, "{") {
			continue
		}
		var rec Record
		if err := json.Unmarshal([]byte(s), &rec); err != nil {
			return rs, fmt.Errorf("line %d: %w", line, err)
		}
		rs = append(rs, rec)
	}
	return rs, sc.Err()
}

// WriteTable prints records as an aligned table: workload, impl,
// threads, median time, spread (min–max and the interquartile range),
// the derived metric, allocations per run, peak heap growth and peak
// tensor memory.
func WriteTable(w io.Writer, rs []Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	ptrs := recordPtrs(rs)
	sp := newSpeedUps(ptrs)
	withSpeedUp := sp.any(ptrs)
	head := "workload\timpl\tthreads\tmedian\tmin–max\tIQR\tmetric\tof limit\tallocs/run\tpeak heap\tpeak tensors\tGC CPU\t"
	if withSpeedUp {
		head += SpeedUpHeader + "\t"
	}
	fmt.Fprintln(tw, head)
	for i, r := range rs {
		extra := ""
		if withSpeedUp {
			extra = sp.cell(ptrs[i]) + "\t"
		}
		if r.Failed() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", r.Workload, r.Impl, r.Threads, Mismatch, extra)
			continue
		}
		iqr := "-"
		if r.Q3Ns > 0 {
			iqr = FormatNs(r.Q3Ns - r.Q1Ns)
		}
		allocs := "-"
		if r.Allocs >= 0 {
			allocs = formatCount(r.Allocs)
		}
		heap := "-"
		if r.Allocs >= 0 || r.LivePeak > 0 {
			heap = heapCell(r)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s–%s\t%s\t%s %s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Workload, r.Impl, r.Threads, FormatNs(r.MedianNs),
			FormatNs(r.MinNs), FormatNs(r.MaxNs), iqr,
			formatMetric(r.Metric), r.Unit, roofCell(&rs[i]), allocs, heap, tensorsCell(r), gcCell(r), extra)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeErrors(w, rs)
}

// Mismatch is what tables show instead of a time for a workload whose
// result did not match its reference (or that failed to run).
const Mismatch = "MISMATCH"

// writeErrors lists the errors of the failed records in rs, one per line.
func writeErrors(w io.Writer, rs []Record) error {
	for _, r := range rs {
		if r.Failed() {
			if _, err := fmt.Fprintf(w, "%s: %s (%s, %s): %s\n", Mismatch, r.Workload, r.Impl, ThreadsPhrase(r.Threads), r.Error); err != nil {
				return err
			}
		}
	}
	return nil
}

// ThreadsPhrase is "1 thread" or "n threads".
func ThreadsPhrase(n int) string {
	if n == 1 {
		return "1 thread"
	}
	return fmt.Sprintf("%d threads", n)
}

// FormatNs formats a duration in nanoseconds with three significant
// digits and a unit: "812ns", "1.25µs", "2.91ms", "1.20s".
func FormatNs(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.3gns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.3gµs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.3gms", ns/1e6)
	}
	return fmt.Sprintf("%.3gs", ns/1e9)
}

func formatMetric(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func formatCount(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

func formatBytes(b float64) string {
	switch {
	case b < 1<<10:
		return fmt.Sprintf("%.0fB", b)
	case b < 1<<20:
		return fmt.Sprintf("%.1fKiB", b/(1<<10))
	case b < 1<<30:
		return fmt.Sprintf("%.1fMiB", b/(1<<20))
	}
	return fmt.Sprintf("%.2fGiB", b/(1<<30))
}

// Row pairs one workload's measurement by peel (or by the reference
// library the workload's Impl names) with the peer's, at one thread
// count.
type Row struct {
	Workload string
	Threads  int
	// Ours is the record of this harness's side; nil when only the peer
	// measured the workload.
	Ours *Record
	// Peer is the peer's record; nil when the peer lacks the workload.
	Peer *Record
}

// Ratio returns Ours' median over Peer's (below 1: ours is faster), and
// false when either side is missing or failed.
func (r Row) Ratio() (float64, bool) {
	if r.Ours == nil || r.Peer == nil || r.Ours.Failed() || r.Peer.Failed() || r.Peer.MedianNs <= 0 {
		return 0, false
	}
	return r.Ours.MedianNs / r.Peer.MedianNs, true
}

// Pair groups rs into rows by workload and thread count, in the order the
// pairs first appear: records whose Impl is peer fill Peer, the others
// Ours (the first of each wins).
func Pair(rs []Record, peer string) []Row {
	type key struct {
		name    string
		threads int
	}
	at := map[key]int{}
	var rows []Row
	for i := range rs {
		r := &rs[i]
		k := key{r.Workload, r.Threads}
		j, ok := at[k]
		if !ok {
			j = len(rows)
			at[k] = j
			rows = append(rows, Row{Workload: r.Workload, Threads: r.Threads})
		}
		switch {
		case peer != "" && r.Impl == peer:
			if rows[j].Peer == nil {
				rows[j].Peer = r
			}
		case rows[j].Ours == nil:
			rows[j].Ours = r
		}
	}
	return rows
}

// HasPeer reports whether any row has a peer record.
func HasPeer(rows []Row) bool {
	for _, r := range rows {
		if r.Peer != nil {
			return true
		}
	}
	return false
}

// WriteComparison prints rows as an aligned table: workload, impl,
// threads, our median and interquartile range, the peer's, the ratio
// ours/peer (below 1: ours is faster), our metric, allocations per run
// and peak heap. A side the peer lacks shows "—"; a failed side shows
// Mismatch, and its error is listed under the table.
func WriteComparison(w io.Writer, rows []Row, peer string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	mine := ours(rows)
	sp := newSpeedUps(mine)
	withSpeedUp := sp.any(mine)
	head := fmt.Sprintf("workload\timpl\tthreads\tmedian\tIQR\t%s\tIQR\tpeel/%s\tmetric\tof limit\t%s of limit\tallocs/run\tpeak heap\tpeak tensors\tGC CPU\t", peer, peer, peer)
	if withSpeedUp {
		head += SpeedUpHeader + "\t"
	}
	fmt.Fprintln(tw, head)
	var failed []Record
	for _, r := range rows {
		impl, med, iqr, metric, allocs, heap, tensors, gc := "-", Dash, Dash, "-", "-", "-", "-", "-"
		if o := r.Ours; o != nil {
			impl, gc = o.Impl, gcCell(*o)
			med, iqr = medianCell(*o), iqrCell(*o)
			if o.Failed() {
				failed = append(failed, *o)
			} else {
				metric = formatMetric(o.Metric) + " " + o.Unit
				if o.Allocs >= 0 {
					allocs = formatCount(o.Allocs)
				}
				if o.Allocs >= 0 || o.LivePeak > 0 {
					heap = heapCell(*o)
				}
				tensors = tensorsCell(*o)
			}
		}
		pmed, piqr := Dash, Dash
		if p := r.Peer; p != nil {
			pmed, piqr = medianCell(*p), iqrCell(*p)
			if p.Failed() {
				failed = append(failed, *p)
			}
		}
		extra := ""
		if withSpeedUp {
			extra = sp.cell(r.Ours) + "\t"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Workload, impl, r.Threads, med, iqr, pmed, piqr, ratioCell(r), metric, roofCell(r.Ours), roofCell(r.Peer), allocs, heap, tensors, gc, extra)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeErrors(w, failed)
}

// Dash marks a measurement that does not exist (the peer lacks the
// workload).
const Dash = "—"

func medianCell(r Record) string {
	if r.Failed() {
		return Mismatch
	}
	return FormatNs(r.MedianNs)
}

func iqrCell(r Record) string {
	if r.Failed() || r.Q3Ns <= 0 {
		return "-"
	}
	return FormatNs(r.Q3Ns - r.Q1Ns)
}

// ratioCell formats r's ratio with two decimals (three significant
// digits past 10), "—" when a side is missing and "-" when one failed.
func ratioCell(r Row) string {
	if v, ok := r.Ratio(); ok {
		return FormatRatio(v)
	}
	if r.Ours == nil || r.Peer == nil {
		return Dash
	}
	return "-"
}

// FormatRatio formats a ratio of medians: "0.47", "7.63", "12.4", and
// two significant digits below 0.01.
func FormatRatio(v float64) string {
	switch {
	case v < 0.01:
		return fmt.Sprintf("%.2g", v)
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// tensorsCell is a record's peak tensor memory, "-" where it was not
// measured (peers, records from before it was, mpibench's steps).
func tensorsCell(r Record) string {
	if r.PeakTensors <= 0 && r.Allocs < 0 {
		return "-"
	}
	return formatBytes(float64(r.PeakTensors))
}

// heapCell is a record's peak heap, with its live peak when measured
// (alone when the peak heap was not: mpibench's sharded steps).
func heapCell(r Record) string {
	if r.LivePeak > 0 && r.Allocs < 0 {
		return "live " + formatBytes(float64(r.LivePeak))
	}
	if r.LivePeak > 0 {
		return formatBytes(float64(r.PeakHeap)) + " (live " + formatBytes(float64(r.LivePeak)) + ")"
	}
	return formatBytes(float64(r.PeakHeap))
}

// SpeedUpHeader is the title of the column that shows, on each
// two-thread row, the one-thread median over the two-thread one of the
// same workload and implementation (above 1: two threads are faster).
const SpeedUpHeader = "2-thread speed-up"

// speedUps holds the one-thread medians of a run, by workload and impl.
type speedUps map[[2]string]float64

// newSpeedUps collects the one-thread medians of rs (the first record of
// each workload and impl wins, as in Pair).
func newSpeedUps(rs []*Record) speedUps {
	s := speedUps{}
	for _, r := range rs {
		if r == nil || r.Threads != 1 || r.Failed() || r.MedianNs <= 0 {
			continue
		}
		if k := [2]string{r.Workload, r.Impl}; s[k] == 0 {
			s[k] = r.MedianNs
		}
	}
	return s
}

// SpeedUp returns r's two-thread speed-up: the one-thread median of r's
// workload and impl over r's median, and false unless r was measured at
// two threads and the run holds its one-thread record.
func (s speedUps) SpeedUp(r *Record) (float64, bool) {
	if r == nil || r.Threads != 2 || r.Failed() || r.MedianNs <= 0 {
		return 0, false
	}
	one, ok := s[[2]string{r.Workload, r.Impl}]
	return one / r.MedianNs, ok
}

// any reports whether some record of rs has a two-thread speed-up, so
// tables of one-thread runs keep their columns.
func (s speedUps) any(rs []*Record) bool {
	for _, r := range rs {
		if _, ok := s.SpeedUp(r); ok {
			return true
		}
	}
	return false
}

// cell formats r's speed-up as "1.62×", or "-".
func (s speedUps) cell(r *Record) string {
	if v, ok := s.SpeedUp(r); ok {
		return FormatRatio(v) + "×"
	}
	return "-"
}

// recordPtrs returns pointers to the records of rs.
func recordPtrs(rs []Record) []*Record {
	ps := make([]*Record, len(rs))
	for i := range rs {
		ps[i] = &rs[i]
	}
	return ps
}

// ours returns the records of the harness's side of rows.
func ours(rows []Row) []*Record {
	ps := make([]*Record, 0, len(rows))
	for _, r := range rows {
		ps = append(ps, r.Ours)
	}
	return ps
}

// gcCell is the collector's share of the CPU while r's samples ran, or
// "-" when it was not measured (or was nil).
func gcCell(r Record) string {
	if r.Failed() || r.GCPercent <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", r.GCPercent)
}
