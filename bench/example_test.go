package bench_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/bench"
)

// A workload's Setup returns the function that is timed and a check of
// its latest result against a reference; Measure refuses to time a
// workload whose check fails. Compare matches a run with an earlier one.
func Example() {
	sum := bench.Workload{
		Name: "sum_1k", Impl: "peel", Doc: "the sum of 1000 float64s", Unit: "ns/op",
		Metric: func(ns float64) float64 { return ns },
		Setup: func() (run func(), check func() error) {
			x := peel.Ones(peel.Float64, 1000)
			var y *peel.Tensor
			run = func() { y = peel.Sum(x) }
			check = func() error {
				if v := y.Item(); v != 1000 {
					return fmt.Errorf("sum = %v, want 1000", v)
				}
				return nil
			}
			return run, check
		},
	}
	// Short runs for the example; the zero Options measure for about 1s.
	opt := bench.Options{Reps: 3, MinTime: 3 * time.Millisecond, Warmup: time.Millisecond, Threads: 1}
	res, err := bench.Measure(sum, opt)
	fmt.Println(len(res.SamplesNs), "samples", res.Unit, err)

	broken := sum
	broken.Name = "sum_broken"
	broken.Setup = func() (func(), func() error) {
		return func() {}, func() error { return errors.New("no result") }
	}
	_, err = bench.Measure(broken, opt)
	fmt.Println(err)

	old := []bench.Record{{Workload: "sum_1k", Impl: "peel", Threads: 1, MedianNs: 1000}}
	cur := []bench.Record{{Workload: "sum_1k", Impl: "peel", Threads: 1, MedianNs: 1250}}
	for _, c := range bench.Compare(old, cur, 1.10) {
		r, _ := c.Ratio()
		fmt.Println(c.Workload, bench.FormatRatio(r), "regressed:", c.Regressed)
	}
	// Output:
	// 3 samples ns/op <nil>
	// sum_broken: wrong result: no result
	// sum_1k 1.25 regressed: true
}
