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
// may not measure them).
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
	Allocs        float64 `json:"allocs"`
	Q1Ns          float64 `json:"q1_ns,omitempty"`
	Q3Ns          float64 `json:"q3_ns,omitempty"`
	Bytes         float64 `json:"bytes,omitempty"`
	PeakHeap      uint64  `json:"peak_heap_bytes,omitempty"`
	Reps          int     `json:"reps,omitempty"`
	RunsPerSample int     `json:"runs_per_sample,omitempty"`
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
// the derived metric, allocations per run and peak heap growth.
func WriteTable(w io.Writer, rs []Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\timpl\tthreads\tmedian\tmin–max\tIQR\tmetric\tallocs/run\tpeak heap\t")
	for _, r := range rs {
		iqr := "-"
		if r.Q3Ns > 0 {
			iqr = FormatNs(r.Q3Ns - r.Q1Ns)
		}
		allocs := "-"
		if r.Allocs >= 0 {
			allocs = formatCount(r.Allocs)
		}
		heap := "-"
		if r.Allocs >= 0 {
			heap = formatBytes(float64(r.PeakHeap))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s–%s\t%s\t%s %s\t%s\t%s\t\n",
			r.Workload, r.Impl, r.Threads, FormatNs(r.MedianNs),
			FormatNs(r.MinNs), FormatNs(r.MaxNs), iqr,
			formatMetric(r.Metric), r.Unit, allocs, heap)
	}
	return tw.Flush()
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
