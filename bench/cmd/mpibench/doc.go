// Command mpibench measures peel's MPI engine under mpirun (build tag
// mpi): the all-reduce of 4 KB … 64 MB of float32 through peel's
// Communicator next to a direct MPI_Allreduce loop on the same buffers
// (peel's overhead), and one data-parallel training step of an MLP
// (784-1024-1024-10, batch 256 per rank, float32, SGD) with
// dist/ddp.ValueAndGrad, compiled (ddp_mlp_step_<n>rank) and eager
// (…_eager_…), with and without overlap (…_nooverlap_…),
// next to the same step on one rank alone (compute only) and the
// all-reduce of its gradients alone (communication only). Every rank
// measures; rank 0 prints a table and, with -json, writes JSON records
// in peelbench's format (impl "peel", and "mpi" for the direct loop).
//
//	go build -tags mpi -o /tmp/mpibench ./bench/cmd/mpibench
//	mpirun -np 2 /tmp/mpibench -json mpi.jsonl
//
// peelbench -dist runs it under mpirun at 1 and 2 ranks next to its
// torch.distributed peers (bench/peers/torch_gloo_allreduce.py,
// bench/peers/torch_ddp_step.py) and prints them side by side. Kernels
// run on one thread (cpu.SetThreads(1)); GOMAXPROCS is left as it is, so
// the progress of non-blocking all-reduces runs beside the compute, as
// gloo's threads do beside torch's.
package main
