//go:build mpi

package ddp_test

import (
	"os"
	"testing"

	"github.com/peel-ml/peel/dist"
)

// TestMain finalizes MPI after the tests, as every MPI program must.
func TestMain(m *testing.M) {
	code := m.Run()
	dist.Finalize()
	os.Exit(code)
}
