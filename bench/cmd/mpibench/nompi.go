//go:build !mpi

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "mpibench needs the MPI engine: go build -tags mpi ./bench/cmd/mpibench, then run it under mpirun")
	os.Exit(1)
}
