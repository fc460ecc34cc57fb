//go:build !mpi

package dist

import "os"

// MPIEnabled reports whether this build has the MPI engine (the mpi
// tag); without it, World is a job of one process.
const MPIEnabled = false

// World returns the communicator of every process of the job: with the
// mpi build tag, the processes mpirun started (MPI_COMM_WORLD); without
// it, this process alone.
func World() Communicator { return &inproc{g: newGroup(1, "world"), rank: 0} }

// Finalize ends MPI (with the mpi build tag); without it, it does
// nothing.
func Finalize() {}

// Abort ends every process of the job with the exit code (MPI_Abort,
// with the mpi build tag); without it, this process.
func Abort(code int) { os.Exit(code) }
