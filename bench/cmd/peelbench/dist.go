package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/peel-ml/peel/bench"
)

// runDist is -dist: the MPI workloads of bench/cmd/mpibench (built here
// with the mpi tag) under mpirun at one rank and at c.dist ranks, and,
// with -peer torch, their torch.distributed peers over gloo
// (bench/peers/torch_gloo_allreduce.py, torch_ddp_step.py) at the same
// rank counts, reported side by side. mpirun and Open MPI's development
// files must be installed (openmpi-bin, libopenmpi-dev).
func runDist(c config) (int, error) {
	tmp, err := os.MkdirTemp("", "peelbench-dist")
	if err != nil {
		return exitFailed, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "mpibench")
	build := exec.Command("go", "build", "-tags", "mpi", "-o", bin, "github.com/peel-ml/peel/bench/cmd/mpibench")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return exitFailed, fmt.Errorf("-dist: building bench/cmd/mpibench with the mpi tag (needs libopenmpi-dev): %w", err)
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		return exitFailed, fmt.Errorf("-dist needs mpirun (apt-get install openmpi-bin): %w", err)
	}
	var recs []bench.Record
	reps := strconv.Itoa(max(3, c.reps/2))
	for _, np := range []int{1, c.dist} {
		out := filepath.Join(tmp, fmt.Sprintf("mpi%d.jsonl", np))
		cmd := exec.Command(mpirun, "--oversubscribe", "-np", strconv.Itoa(np), bin, "-reps", reps, "-json", out)
		cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		fmt.Fprintf(os.Stderr, "peelbench: %s\n", strings.Join(cmd.Args, " "))
		if err := cmd.Run(); err != nil {
			return exitFailed, fmt.Errorf("-dist: mpibench at %d rank(s): %w", np, err)
		}
		rs, err := readRecords(out)
		if err != nil {
			return exitFailed, err
		}
		recs = append(recs, rs...)
	}
	meta := bench.Meta{Machine: "mpirun on this machine", Command: commandLine()}
	if c.peer == "torch" {
		python, version, err := bench.FindPython(c.python)
		if err != nil {
			fmt.Fprintf(os.Stderr, "peelbench: -peer torch: %v; continuing with peel alone\n", err)
		} else {
			meta.Peer = "torch " + version
			peers := [][]string{
				{"bench/peers/torch_gloo_allreduce.py", "--world", strconv.Itoa(c.dist)},
				{"bench/peers/torch_ddp_step.py", "--world", "1"},
				{"bench/peers/torch_ddp_step.py", "--world", strconv.Itoa(c.dist)},
			}
			for i, args := range peers {
				out := filepath.Join(tmp, fmt.Sprintf("torch%d.jsonl", i))
				cmd := exec.Command(python, append(append(args, "--reps", reps), "--out", out)...)
				cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
				fmt.Fprintf(os.Stderr, "peelbench: %s\n", strings.Join(cmd.Args, " "))
				if err := cmd.Run(); err != nil {
					return exitFailed, fmt.Errorf("-dist: %s: %w", args[0], err)
				}
				rs, err := readRecords(out)
				if err != nil {
					return exitFailed, err
				}
				recs = append(recs, rs...)
			}
		}
	}
	printOverhead(recs)
	return report(c, recs, nil, meta)
}

// printOverhead prints peel's all-reduce next to the direct MPI loop's
// (impl "mpi"), and the step's overlap: how much of the communication
// the overlapped step hides.
func printOverhead(recs []bench.Record) {
	at := map[[2]string]bench.Record{}
	for _, r := range recs {
		at[[2]string{r.Workload, r.Impl}] = r
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintln(w, "all-reduce through peel's MPI communicator vs a direct MPI_Allreduce loop on the same sizes:")
	for _, r := range recs {
		if m, ok := at[[2]string{r.Workload, "mpi"}]; ok && r.Impl == "peel" {
			fmt.Fprintf(w, "  %-24s peel %8.3f GB/s   MPI_Allreduce %8.3f GB/s   peel overhead %+6.1f%%\n", r.Workload, r.Metric, m.Metric, 100*(r.MedianNs/m.MedianNs-1))
		}
	}
	for _, r := range recs {
		if !strings.HasPrefix(r.Workload, "ddp_mlp_step_") || r.Impl != "peel" || strings.Contains(r.Workload, "_eager") || strings.Contains(r.Workload, "_nooverlap") || strings.Contains(r.Workload, "compute_only") {
			continue
		}
		n := strings.TrimPrefix(r.Workload, "ddp_mlp_step_")
		comp, ok1 := at[[2]string{"ddp_mlp_step_compute_only_" + n, "peel"}]
		comm, ok2 := at[[2]string{"ddp_mlp_allreduce_grads_" + n, "peel"}]
		no, ok3 := at[[2]string{"ddp_mlp_step_nooverlap_" + n, "peel"}]
		if ok1 && ok2 && ok3 {
			fmt.Fprintf(w, "step at %s: compute %.2f ms, communication %.2f ms, step without overlap %.2f ms, with overlap %.2f ms = compute + %.2f × communication\n",
				n, comp.Metric, comm.Metric, no.Metric, r.Metric, (r.Metric-comp.Metric)/comm.Metric)
		}
	}
	if one, ok := at[[2]string{"ddp_mlp_step_1rank", "peel"}]; ok {
		for _, r := range recs {
			if r.Impl == "peel" && strings.HasPrefix(r.Workload, "ddp_mlp_step_") && strings.HasSuffix(r.Workload, "rank") && !strings.Contains(strings.TrimPrefix(r.Workload, "ddp_mlp_step_"), "_") && r.Workload != one.Workload {
				fmt.Fprintf(w, "weak scaling, 1 → %s: %.2f → %.2f ms/step, efficiency %.0f%%\n", strings.TrimPrefix(r.Workload, "ddp_mlp_step_"), one.Metric, r.Metric, 100*one.MedianNs/r.MedianNs)
			}
		}
	}
}
