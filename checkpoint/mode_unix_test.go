//go:build unix

package checkpoint_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/checkpoint"
)

// TestSaveFollowsUmask: a saved checkpoint has mode 0666 less the umask,
// as torch's and numpy's files do (it was 0600: another user's serving
// process could not read it).
func TestSaveFollowsUmask(t *testing.T) {
	for _, mask := range []int{0o022, 0o077} {
		old := syscall.Umask(mask)
		path := filepath.Join(t.TempDir(), "x.safetensors")
		err := checkpoint.Save(path, map[string]*peel.Tensor{"w": peel.Ones(peel.Float32, 2)})
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := st.Mode().Perm(), os.FileMode(0o666&^mask); got != want {
			t.Fatalf("umask %03o: mode %v, want %v", mask, got, want)
		}
	}
}
