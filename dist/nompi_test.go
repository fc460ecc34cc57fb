//go:build !mpi

package dist_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
)

// TestWorldUnderLauncherWithoutTag: a binary built without the mpi tag
// that mpirun started as one of several processes refuses to run alone
// (each would have trained on its own part, silently), naming the tag;
// one process of one, or no launcher, is a job of one process.
func TestWorldUnderLauncherWithoutTag(t *testing.T) {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, "2")
			err := peel.Catch(func() { dist.World() })
			var pe *peel.Error
			if !errors.As(err, &pe) || !strings.Contains(pe.Error(), "one of 2") || !strings.Contains(pe.Error(), "-tags mpi") || !strings.Contains(pe.Error(), v+"=2") {
				t.Fatalf("got %v, want a *peel.Error naming the launcher's %s and the mpi tag", err, v)
			}
			t.Setenv(v, "1")
			if w := dist.World(); w.Size() != 1 {
				t.Fatalf("one process of one: a world of %d", w.Size())
			}
		})
	}
}
