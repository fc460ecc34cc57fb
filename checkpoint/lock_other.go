//go:build !unix

package checkpoint

import "os"

// lockTemp does nothing where flock is not available.
func lockTemp(*os.File) {}

// unlocked reports false where no lock can tell a stale temporary from
// one being written: removeStale removes nothing there.
func unlocked(string) bool { return false }

// closeAndRename closes f, then renames the temporary tmp over path.
func closeAndRename(f *os.File, tmp, path string) error {
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
