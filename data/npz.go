package data

import (
	"archive/zip"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/peel-ml/peel"
)

// WriteNPZ writes the named tensors to w as a NumPy .npz archive (a zip
// of one .npy file per name, as numpy.savez writes, uncompressed), in
// the order of their names, so that numpy.load(path)[name] reads each.
// The dtypes are WriteNPY's. It returns an error for an empty or
// repeated name or one WriteNPY would return.
func WriteNPZ(w io.Writer, tensors map[string]*peel.Tensor) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		if n == "" || strings.ContainsAny(n, "/\\") {
			return fmt.Errorf("data.WriteNPZ: name %q is empty or holds a path separator", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	z := zip.NewWriter(w)
	for _, n := range names {
		f, err := z.CreateHeader(&zip.FileHeader{Name: n + ".npy", Method: zip.Store})
		if err != nil {
			return fmt.Errorf("data.WriteNPZ: %w", err)
		}
		if err := WriteNPY(f, tensors[n]); err != nil {
			return fmt.Errorf("data.WriteNPZ: %s: %w", n, err)
		}
	}
	if err := z.Close(); err != nil {
		return fmt.Errorf("data.WriteNPZ: %w", err)
	}
	return nil
}

// ReadNPZ reads a NumPy .npz archive of size bytes from r (numpy.savez's
// or savez_compressed's): each member NAME.npy becomes the tensor named
// NAME, read by ReadNPY. It returns an error for a malformed archive, a
// member that is not .npy, or one ReadNPY refuses.
func ReadNPZ(r io.ReaderAt, size int64) (map[string]*peel.Tensor, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("data.ReadNPZ: %w", err)
	}
	out := map[string]*peel.Tensor{}
	for _, f := range z.File {
		name, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok {
			return nil, fmt.Errorf("data.ReadNPZ: member %q is not a .npy file", f.Name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("data.ReadNPZ: member %q appears twice", f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("data.ReadNPZ: %s: %w", f.Name, err)
		}
		t, err := ReadNPY(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("data.ReadNPZ: %s: %w", f.Name, err)
		}
		out[name] = t
	}
	return out, nil
}
