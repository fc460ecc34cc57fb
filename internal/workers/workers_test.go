package workers

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCallsEachPartOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
		counts := make([]atomic.Int32, n)
		Run(n, func(k int) { counts[k].Add(1) })
		for k := range counts {
			if c := counts[k].Load(); c != 1 {
				t.Fatalf("n=%d: part %d ran %d times", n, k, c)
			}
		}
	}
}

func TestRunPanicsWithFirstValueAfterAllParts(t *testing.T) {
	var ran atomic.Int32
	defer func() {
		r := recover()
		if r == nil || fmt.Sprint(r) != "part 3" {
			t.Fatalf("recovered %v, want part 3", r)
		}
		if ran.Load() != 8 {
			t.Fatalf("%d parts ran before the panic reached the caller, want 8", ran.Load())
		}
	}()
	Run(8, func(k int) {
		ran.Add(1)
		if k == 3 {
			panic("part 3")
		}
	})
}

func TestRunNestedAndConcurrent(t *testing.T) {
	var total atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				Run(4, func(int) {
					Run(3, func(k int) { total.Add(int64(k + 1)) })
				})
			}
		}()
	}
	wg.Wait()
	if want := int64(16 * 20 * 4 * 6); total.Load() != want {
		t.Fatalf("total %d, want %d", total.Load(), want)
	}
}

func TestRunWaitsForSlowParts(t *testing.T) {
	// A part that outlasts SpinTime makes the caller block, not return.
	var done atomic.Bool
	Run(2, func(k int) {
		if k == 1 {
			time.Sleep(3 * SpinTime)
			done.Store(true)
		}
	})
	if !done.Load() {
		t.Fatal("Run returned before its slow part ended")
	}
}

func TestRunAfterWorkersBlocked(t *testing.T) {
	// Workers idle past SpinTime block; a later job must still finish.
	Run(4, func(int) {})
	time.Sleep(4 * SpinTime)
	var n atomic.Int32
	Run(4, func(int) { n.Add(1) })
	if n.Load() != 4 {
		t.Fatalf("%d parts ran, want 4", n.Load())
	}
}
