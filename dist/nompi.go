//go:build !mpi

package dist

import (
	"os"
	"strconv"
)

// MPIEnabled reports whether this build has the MPI engine (the mpi
// tag); without it, World is a job of one process.
const MPIEnabled = false

// World returns the communicator of every process of the job: with the
// mpi build tag, the processes mpirun started (MPI_COMM_WORLD); without
// it, this process alone. Without the tag it panics with *peel.Error
// when a launcher started this process as one of several (mpirun's
// environment says so): each would train alone, silently, on its part.
func World() Communicator {
	if n, v := launchedAs(); n > 1 {
		meshErrorf("dist.World", "this process is one of %d that a launcher started (%s), but it was built without the mpi build tag, so it would run alone: build it with -tags mpi (which needs cgo and Open MPI's libopenmpi-dev and pkg-config)", n, v)
	}
	return &inproc{g: newGroup(1, "world"), rank: 0}
}

// launchedAs returns the number of processes a launcher's environment
// says the job has (Open MPI's mpirun, or MPICH's and Slurm's PMI), and
// the variable that says it; 0 when none does.
func launchedAs() (int, string) {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"} {
		if n, err := strconv.Atoi(os.Getenv(v)); err == nil && n > 0 {
			return n, v + "=" + strconv.Itoa(n)
		}
	}
	return 0, ""
}

// Finalize ends MPI (with the mpi build tag); without it, it does
// nothing.
func Finalize() {}

// Abort ends every process of the job with the exit code (MPI_Abort,
// with the mpi build tag); without it, this process.
func Abort(code int) { os.Exit(code) }
