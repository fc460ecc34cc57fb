// Package workers runs the parallel parts of peel's kernels on a pool of
// long-lived goroutines that stay awake for a while between jobs.
//
// Starting a goroutine per parallel kernel, as peel first did, costs
// little in Go but wakes an idle operating-system thread each time, and
// on a virtual machine an idle virtual CPU can take 50–100 µs to wake: a
// 200 µs GEMM block split over two cores then finished no sooner than on
// one. OpenMP runtimes solve this by letting their threads spin before
// they sleep; Run does the same: a worker that finishes a job polls for
// the next one for SpinTime before it blocks, so kernels that follow one
// another (an eager program, a compiled one) find their workers awake.
//
// Run's caller always takes part: it claims parts of its own job like any
// worker, so a job finishes even when every worker is busy (nested or
// concurrent Runs cannot deadlock), and small pools never slow the caller
// down by more than the cost of posting the job.
package workers
