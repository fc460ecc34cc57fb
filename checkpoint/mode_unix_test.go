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

// TestSaveRemovesStaleTemporaries: a temporary left by a Save that was
// killed (named as Save names them, locked by no one) is removed by the
// next Save of the same path; one that a running Save holds (locked), a
// file of another name and one of another target are left alone.
func TestSaveRemovesStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.safetensors")
	stale := filepath.Join(dir, ".c.safetensors.tmp12345")
	held := filepath.Join(dir, ".c.safetensors.tmp777")
	others := []string{filepath.Join(dir, ".c.safetensors.tmpx1"), filepath.Join(dir, ".d.safetensors.tmp1"), filepath.Join(dir, "c.safetensors.tmp1")}
	for _, name := range append([]string{stale, held}, others...) {
		if err := os.WriteFile(name, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := syscall.Flock(int(h.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(path, map[string]*peel.Tensor{"w": peel.Ones(peel.Float32, 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale temporary is still there: %v", err)
	}
	for _, name := range append([]string{held}, others...) {
		if _, err := os.Stat(name); err != nil {
			t.Fatalf("%s was removed: %v", filepath.Base(name), err)
		}
	}
}
