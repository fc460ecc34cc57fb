package dist_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
)

// withCheck turns the MPI engine's check mode on or off for a test and
// restores what PEEL_DIST_CHECK says afterwards.
func withCheck(t *testing.T, on bool) {
	env, _ := strconv.ParseBool(os.Getenv("PEEL_DIST_CHECK"))
	dist.SetCheck(on)
	t.Cleanup(func() { dist.SetCheck(env) })
}

// mismatch is a call that the ranks of the world make with operands or
// collectives that disagree: call runs rank r's side, want is the start
// of the message every rank's *peel.Error must have (n ranks, r this
// one).
type mismatch struct {
	name string
	call func(w dist.Communicator, r, n int)
	want func(r, n int) string
}

// catchMismatches runs each case on every rank and checks that every
// rank panics with a *peel.Error whose message starts as the case says,
// and that the world still works afterwards (the ranks stayed in step:
// none reached MPI with the bad call).
func catchMismatches(t *testing.T, cases []mismatch) {
	w := dist.World()
	r, n := w.Rank(), w.Size()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := peel.Catch(func() { c.call(w, r, n) })
			var pe *peel.Error
			if !errors.As(err, &pe) {
				t.Fatalf("rank %d: got %v (%T), want a *peel.Error", r, err, err)
			}
			if want := c.want(r, n); !strings.HasPrefix(pe.Error(), want) {
				t.Errorf("rank %d: got\n\t%v\nwant it to start with\n\t%s", r, pe, want)
			}
			got := w.AllReduce(peel.FromFloat64s([]float64{1}, 1), dist.Sum)
			near(t, "AllReduce after the mismatch", got, peel.FromFloat64s([]float64{float64(n)}, 1), 0)
		})
	}
}

// shapeOf is rank r's shape in a case where rank 0 differs from the
// others.
func shapeOf(r int, first, others []int) []int {
	if r == 0 {
		return first
	}
	return others
}

// TestWorldCheck runs collectives whose ranks disagree with the check
// mode on (PEEL_DIST_CHECK=1, as CI runs it under mpirun -np 2 and -np
// 3, or SetCheck): every rank panics with the same *peel.Error naming
// the collective, rank 0 and the first rank that differs from it, and
// their operands. It needs an MPI job of two processes or more.
func TestWorldCheck(t *testing.T) {
	w := dist.World()
	if !dist.MPIEnabled || w.Size() < 2 {
		t.Skip("run by CI under mpirun (-tags mpi, two processes or more)")
	}
	if os.Getenv("PEEL_DIST_CHECK") == "" {
		withCheck(t, true)
	}
	ring := func(n, step int) [][2]int {
		p := make([][2]int, n)
		for k := range n {
			p[k] = [2]int{k, (k + step + n) % n}
		}
		return p
	}
	nines := func(last ...int) []int { return append([]int{1, 1, 1, 1, 1, 1, 1, 1}, last...) }
	catchMismatches(t, []mismatch{
		{"shape", func(w dist.Communicator, r, n int) {
			w.AllReduce(peel.Ones(peel.Float32, shapeOf(r, []int{3, 4}, []int{4, 3})...), dist.Sum)
		}, func(r, n int) string {
			return "dist (MPI): AllReduce(sum): rank 0 has f32[3,4] but rank 1 has f32[4,3]"
		}},
		{"dtype", func(w dist.Communicator, r, n int) {
			dt := peel.Float64
			if r == 0 {
				dt = peel.Float32
			}
			w.AllGather(peel.Ones(dt, 3))
		}, func(r, n int) string { return "dist (MPI): AllGather: rank 0 has f32[3] but rank 1 has f64[3]" }},
		{"half float", func(w dist.Communicator, r, n int) {
			dt := peel.Float32
			if r == 0 {
				dt = peel.Float16
			}
			w.AllReduce(peel.Ones(dt, 2), dist.Max)
		}, func(r, n int) string { return "dist (MPI): AllReduce(max): rank 0 has f16[2] but rank 1 has f32[2]" }},
		{"same size, other shape", func(w dist.Communicator, r, n int) {
			w.ReduceScatter(peel.Ones(peel.Int64, shapeOf(r, []int{n, 2, 3}, []int{n, 3, 2})...))
		}, func(r, n int) string {
			return fmt.Sprintf("dist (MPI): ReduceScatter: rank 0 has i64[%d,2,3] but rank 1 has i64[%d,3,2]", n, n)
		}},
		{"only the last rank", func(w dist.Communicator, r, n int) {
			m := 3
			if r == n-1 {
				m = 2
			}
			w.AllToAll(peel.Ones(peel.Float64, n, m))
		}, func(r, n int) string {
			return fmt.Sprintf("dist (MPI): AllToAll: rank 0 has f64[%d,3] but rank %d has f64[%d,2]", n, n-1, n)
		}},
		{"dimensions past the record's", func(w dist.Communicator, r, n int) {
			w.AllReduce(peel.Ones(peel.Float64, shapeOf(r, nines(2, 3), nines(3, 2))...), dist.Sum)
		}, func(r, n int) string {
			return "dist (MPI): AllReduce(sum): rank 0 has f64[1,1,1,1,1,1,1,1,…] (6 elements) but rank 1 has f64[1,1,1,1,1,1,1,1,…] (6 elements)"
		}},
		{"collective", func(w dist.Communicator, r, n int) {
			if r == 0 {
				w.AllReduce(peel.Ones(peel.Float64, 2), dist.Sum)
			} else {
				w.AllGather(peel.Ones(peel.Float64, 2))
			}
		}, func(r, n int) string { return "dist (MPI): rank 0 calls AllReduce(sum) but rank 1 calls AllGather" }},
		{"reduction", func(w dist.Communicator, r, n int) {
			op := dist.Max
			if r == 0 {
				op = dist.Sum
			}
			w.AllReduce(peel.Ones(peel.Float64, 2), op)
		}, func(r, n int) string {
			return "dist (MPI): rank 0 calls AllReduce(sum) but rank 1 calls AllReduce(max)"
		}},
		{"barrier", func(w dist.Communicator, r, n int) {
			if r == 0 {
				w.Barrier()
			} else {
				w.AllReduce(peel.Ones(peel.Float64, 2), dist.Sum)
			}
		}, func(r, n int) string { return "dist (MPI): rank 0 calls Barrier but rank 1 calls AllReduce(sum)" }},
		{"permutation", func(w dist.Communicator, r, n int) {
			step := 1 // a ring on rank 0, the identity on the others
			if r > 0 {
				step = 0
			}
			w.Permute(peel.Ones(peel.Float64, 2), ring(n, step))
		}, func(r, n int) string {
			return "dist (MPI): Permute: rank 0 and rank 1 pass different permutations"
		}},
		{"non-blocking", func(w dist.Communicator, r, n int) {
			w.IAllReduce(peel.Ones(peel.Float64, shapeOf(r, []int{2}, []int{3})...), dist.Sum).Wait()
		}, func(r, n int) string { return "dist (MPI): IAllReduce(sum): rank 0 has f64[2] but rank 1 has f64[3]" }},
	})
}

// TestWorldGuard runs collectives whose ranks disagree with the check
// mode off: the guard every collective of the MPI engine makes still
// stops each rank with a *peel.Error before MPI sees the call. Operands
// of different sizes are the case that matters: Open MPI 4.1 reports a
// small excess as truncation on one rank only, while another gets a
// wrong result, and writes a large one past the receiving buffer (a
// crash, or silently corrupted memory). It needs an MPI job of two
// processes or more.
func TestWorldGuard(t *testing.T) {
	w := dist.World()
	if !dist.MPIEnabled || w.Size() < 2 {
		t.Skip("run by CI under mpirun (-tags mpi, two processes or more)")
	}
	withCheck(t, false)
	// count is rank r's number of elements: rank 0 has 4, the others
	// 100004 (800 kB, where Open MPI wrote past the buffer).
	count := func(r int) int { return 4 + min(r, 1)*100000 }
	guard := func(what, cause string) func(r, n int) string {
		return func(r, n int) string {
			return fmt.Sprintf("dist (MPI): %s: the processes %s (this process, rank %d of %d, has f64[%d];", what, cause, r, n, count(r))
		}
	}
	catchMismatches(t, []mismatch{
		{"AllReduce sizes", func(w dist.Communicator, r, n int) {
			w.AllReduce(peel.Ones(peel.Float64, count(r)), dist.Sum)
		}, guard("AllReduce(sum)", "pass operands of different sizes")},
		{"AllGather sizes", func(w dist.Communicator, r, n int) {
			w.AllGather(peel.Ones(peel.Float64, count(r)))
		}, guard("AllGather", "pass operands of different sizes")},
		{"Permute sizes", func(w dist.Communicator, r, n int) {
			w.Permute(peel.Ones(peel.Float64, count(r)), [][2]int{{0, 1}, {1, 0}})
		}, guard("Permute", "pass operands of different sizes")},
		{"IAllReduce sizes", func(w dist.Communicator, r, n int) {
			w.IAllReduce(peel.Ones(peel.Float64, count(r)), dist.Sum).Wait()
		}, guard("IAllReduce(sum)", "pass operands of different sizes")},
		{"dtypes", func(w dist.Communicator, r, n int) {
			dt := peel.Float64
			if r == 0 {
				dt = peel.Float32
			}
			w.AllReduce(peel.Ones(dt, 4), dist.Sum)
		}, func(r, n int) string {
			dt := "f64"
			if r == 0 {
				dt = "f32"
			}
			return fmt.Sprintf("dist (MPI): AllReduce(sum): the processes pass different dtypes (this process, rank %d of %d, has %s[4];", r, n, dt)
		}},
		{"collectives", func(w dist.Communicator, r, n int) {
			if r == 0 {
				w.AllReduce(peel.Ones(peel.Float64, 4), dist.Sum)
			} else {
				w.AllGather(peel.Ones(peel.Float64, 4))
			}
		}, func(r, n int) string {
			what := "AllGather"
			if r == 0 {
				what = "AllReduce(sum)"
			}
			return fmt.Sprintf("dist (MPI): %s: the processes call different collectives (this process, rank %d of %d, has f64[4];", what, r, n)
		}},
	})
}

// TestWorldFaultExit is run by CI under mpirun with PEEL_MPI_FAULT=exit
// (it skips otherwise): rank 1 exits (os.Exit(3), without MPI_Finalize)
// while the others wait in an AllReduce. Open MPI's mpirun notices the
// process that ended and kills the others, so the job ends non-zero at
// once; CI checks the exit status and that it came before its timeout.
func TestWorldFaultExit(t *testing.T) {
	if os.Getenv("PEEL_MPI_FAULT") != "exit" {
		t.Skip("run by CI under mpirun with PEEL_MPI_FAULT=exit")
	}
	w := dist.World()
	if w.Rank() == 1 {
		time.Sleep(500 * time.Millisecond) // the others are in the AllReduce
		os.Exit(3)
	}
	w.AllReduce(data(1, 4), dist.Sum)
	t.Fatalf("rank %d: the AllReduce completed without rank 1", w.Rank())
}

// TestWorldFaultHang is run by CI under mpirun with PEEL_MPI_FAULT=hang
// and PEEL_DIST_TIMEOUT=3s (it skips otherwise): rank 1 stops calling
// collectives (it sleeps for an hour) while the others wait in an
// AllReduce. Their watchdog reports the collective and aborts the job
// after 3s; CI checks the exit status, that it came well before its
// timeout, and the watchdog's report. (TestWorldFaultHangWait does the
// same for a Request's Wait.)
func TestWorldFaultHang(t *testing.T) {
	if os.Getenv("PEEL_MPI_FAULT") != "hang" {
		t.Skip("run by CI under mpirun with PEEL_MPI_FAULT=hang")
	}
	w := dist.World()
	if w.Rank() == 1 {
		time.Sleep(time.Hour)
	}
	w.AllReduce(data(1, 4), dist.Sum)
	t.Fatalf("rank %d: the AllReduce completed without rank 1", w.Rank())
}

// TestSetTimeoutNegative: a negative timeout is an error.
func TestSetTimeoutNegative(t *testing.T) {
	err := peel.Catch(func() { dist.SetTimeout(-time.Second) })
	var pe *peel.Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Error(), "negative timeout -1s") {
		t.Fatalf("got %v, want a *peel.Error naming the negative timeout", err)
	}
}

// BenchmarkWorldAllReduce is an AllReduce of 4 f64 over the world (one
// process under go test: the watchdog's bookkeeping and the host copies,
// no communication; under mpirun also the guard, or the check), with the
// watchdog on and off: -benchmem shows what the watchdog and the guard
// add in allocations (nothing; the check mode adds 2).
func BenchmarkWorldAllReduce(b *testing.B) {
	w := dist.World()
	x := data(1, 4)
	for _, d := range []time.Duration{0, time.Minute} {
		b.Run("timeout="+d.String(), func(b *testing.B) {
			dist.SetTimeout(d)
			defer dist.SetTimeout(dist.DefaultTimeout)
			for b.Loop() {
				w.AllReduce(x, dist.Sum)
			}
		})
	}
}

// TestWorldFaultPanic is run by CI under mpirun with PEEL_MPI_FAULT=panic
// or =error (it skips otherwise), written as a program is, with
// `defer dist.Finalize()`: rank 1 panics (=error: raises a *peel.Error,
// a shape bug on one rank) while the others wait in an AllReduce.
// Finalize, deferred, prints the panic with the rank and aborts the job;
// before, MPI_Finalize waited for the others and the job hung until the
// watchdog, the panic never printed. CI checks the exit status, that it
// came within seconds, and the message.
func TestWorldFaultPanic(t *testing.T) {
	mode := os.Getenv("PEEL_MPI_FAULT")
	if mode != "panic" && mode != "error" {
		t.Skip("run by CI under mpirun with PEEL_MPI_FAULT=panic or =error")
	}
	w := dist.World()
	defer dist.Finalize()
	if w.Rank() == 1 {
		time.Sleep(300 * time.Millisecond) // the others are in the AllReduce
		if mode == "panic" {
			panic("boom on rank 1")
		}
		peel.Reshape(peel.Ones(peel.Float64, 4), 3)
	}
	w.AllReduce(data(1, 4), dist.Sum)
	t.Fatalf("rank %d: the AllReduce completed without rank 1", w.Rank())
}
