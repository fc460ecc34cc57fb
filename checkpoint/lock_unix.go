//go:build unix

package checkpoint

import (
	"os"
	"syscall"
)

// lockTemp takes an exclusive advisory lock (flock) on f, a temporary
// file Save writes, held until f is closed: removeStale leaves a locked
// temporary alone, since its Save is still writing it.
func lockTemp(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

// unlocked reports whether no process holds a lock on the file at name
// (taking the lock, which closing the file releases): a temporary of a
// Save that is not running any more.
func unlocked(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// closeAndRename renames the temporary tmp over path, then closes f: the
// lock is held until the temporary has its final name, so another Save's
// removeStale never takes it for a stale one.
func closeAndRename(f *os.File, tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
