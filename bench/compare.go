package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Change is one workload's median in a new run against an earlier run of
// the same workload, implementation and thread count.
type Change struct {
	Workload, Impl string
	Threads        int
	// OldNs and NewNs are the medians; 0 on a side that is missing or
	// failed.
	OldNs, NewNs float64
	// Status is "", or "new" (not in the old run), "gone" (not in the new
	// run), "mismatch" (the new run failed its check) or "fixed" (the old
	// run failed its check, the new one passed).
	Status string
	// Regressed is set when the new median exceeds the old one by more
	// than the threshold, or when the new run failed its check.
	Regressed bool
}

// Ratio returns NewNs/OldNs, and false when either is missing.
func (c Change) Ratio() (float64, bool) {
	if c.OldNs <= 0 || c.NewNs <= 0 {
		return 0, false
	}
	return c.NewNs / c.OldNs, true
}

// Compare matches the records of a new run with an earlier run's on
// workload, impl and threads, in the new run's order followed by the
// workloads only the old run has. A timed change regresses when
// new/old median > threshold (1.10: more than 10% slower); a workload
// that failed its check in the new run regresses whatever its time.
// Compare panics when threshold is not positive.
func Compare(old, cur []Record, threshold float64) []Change {
	if !(threshold > 0) {
		panic(fmt.Sprintf("bench.Compare: threshold %v is not positive", threshold))
	}
	type key struct {
		name, impl string
		threads    int
	}
	olds := map[key]Record{}
	for _, r := range old {
		olds[key{r.Workload, r.Impl, r.Threads}] = r
	}
	seen := map[key]bool{}
	var out []Change
	for _, n := range cur {
		k := key{n.Workload, n.Impl, n.Threads}
		if seen[k] {
			continue
		}
		seen[k] = true
		c := Change{Workload: n.Workload, Impl: n.Impl, Threads: n.Threads}
		if !n.Failed() {
			c.NewNs = n.MedianNs
		}
		o, ok := olds[k]
		switch {
		case n.Failed():
			c.Status, c.Regressed = "mismatch", true
			if ok && !o.Failed() {
				c.OldNs = o.MedianNs
			}
		case !ok:
			c.Status = "new"
		case o.Failed():
			c.Status = "fixed"
		default:
			c.OldNs = o.MedianNs
			if r, ok := c.Ratio(); ok && r > threshold {
				c.Regressed = true
			}
		}
		out = append(out, c)
	}
	for _, o := range old {
		k := key{o.Workload, o.Impl, o.Threads}
		if seen[k] {
			continue
		}
		seen[k] = true
		c := Change{Workload: o.Workload, Impl: o.Impl, Threads: o.Threads, Status: "gone"}
		if !o.Failed() {
			c.OldNs = o.MedianNs
		}
		out = append(out, c)
	}
	return out
}

// Offenders returns the regressed changes whose Impl is not one of
// ignore (a peer's times are context, not this code's regressions).
func Offenders(cs []Change, ignore ...string) []Change {
	var out []Change
outer:
	for _, c := range cs {
		if !c.Regressed {
			continue
		}
		for _, s := range ignore {
			if c.Impl == s {
				continue outer
			}
		}
		out = append(out, c)
	}
	return out
}

// WriteChanges prints cs as an aligned table: workload, impl, threads,
// old and new medians, new/old and the change in percent, and a note
// ("REGRESSED", or the Status).
func WriteChanges(w io.Writer, cs []Change) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\timpl\tthreads\told\tnew\tnew/old\tchange\t\t")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t", c.Workload, c.Impl, c.Threads, nsCell(c.OldNs), nsCell(c.NewNs))
		if r, ok := c.Ratio(); ok {
			fmt.Fprintf(tw, "%.3f\t%+.1f%%\t", r, 100*(r-1))
		} else {
			fmt.Fprint(tw, "-\t-\t")
		}
		note := c.Status
		if c.Regressed {
			note = "REGRESSED"
			if c.Status != "" {
				note += " (" + c.Status + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t\n", note)
	}
	return tw.Flush()
}

func nsCell(ns float64) string {
	if ns <= 0 {
		return "-"
	}
	return FormatNs(ns)
}
