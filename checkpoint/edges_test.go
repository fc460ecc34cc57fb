package checkpoint_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/checkpoint"
)

// safetensors builds a file from a header written by hand (padded with
// spaces to a multiple of 8) and data bytes: the independent writer of
// these tests.
func safetensors(header string, data []byte) []byte {
	for (8+len(header))%8 != 0 {
		header += " "
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	return append(append(n[:], header...), data...)
}

// TestHeaderStrictness: a header that is not valid UTF-8 (a name or a
// metadata value: Go's JSON decoder would change it to U+FFFD, so two
// names could become one) and data_offsets that are not a pair are
// refused, naming the problem; the same files written correctly open.
func TestHeaderStrictness(t *testing.T) {
	eight := make([]byte, 8)
	for _, c := range []struct {
		name, header, want string
	}{
		{"a valid file", `{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, ""},
		{"a name not UTF-8", "{\"a\xff\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", "not valid UTF-8 (at byte 3"},
		{"metadata not UTF-8", "{\"__metadata__\":{\"k\":\"v\xc3\"},\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", "not valid UTF-8"},
		{"three offsets", `{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8,8]}}`, `tensor "a": data_offsets has 3 entries`},
		{"one offset", `{"a":{"dtype":"F64","shape":[1],"data_offsets":[8]}}`, `data_offsets has 1 entries`},
		{"no offsets", `{"a":{"dtype":"F64","shape":[1]}}`, `data_offsets has 0 entries`},
	} {
		b := safetensors(c.header, eight)
		_, err := checkpoint.NewReader(bytes.NewReader(b), int64(len(b)))
		if c.want == "" {
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			continue
		}
		if _, ok := err.(*peel.Error); !ok || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: got %v, want a *peel.Error with %q", c.name, err, c.want)
		}
	}
}

// TestSaveRefusesInvalidUTF8: a metadata value that is not valid UTF-8
// cannot be written into the JSON header unchanged: Save refuses it
// instead of writing U+FFFD. (A map key that is not UTF-8 is quoted
// with escapes in its leaf's path, so its name is ASCII and kept.)
func TestSaveRefusesInvalidUTF8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	err := checkpoint.Save(path, map[string]*peel.Tensor{"w": peel.Ones(peel.Float32, 2)}, map[string]string{"note": "caf\xe9"})
	if _, ok := err.(*peel.Error); !ok || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("metadata not UTF-8: got %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a refused Save left a file: %v", err)
	}
	m := map[string]*peel.Tensor{"w\xff": peel.Ones(peel.Float32, 2), "w\xfe": peel.Zeros(peel.Float32, 2)}
	if err := checkpoint.Save(path, m); err != nil {
		t.Fatal(err)
	}
	back, err := checkpoint.Load(path, m)
	if err != nil || back["w\xff"].Float32s()[0] != 1 || back["w\xfe"].Float32s()[0] != 0 {
		t.Fatalf("keys not UTF-8 round trip: %v", err)
	}
}

// TestLoadIntoZeroTree: loading into a zero-valued tree (nil leaves)
// names checkpoint.Load, the leaf, and what like is for, not the tree
// package's internals.
func TestLoadIntoZeroTree(t *testing.T) {
	type mlp struct{ W, B *peel.Tensor }
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := checkpoint.Save(path, mlp{peel.Ones(peel.Float32, 2, 2), peel.Zeros(peel.Float32, 2)}); err != nil {
		t.Fatal(err)
	}
	_, err := checkpoint.Load(path, mlp{})
	var pe *peel.Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "checkpoint.Load") || !strings.Contains(err.Error(), ".W") || !strings.Contains(err.Error(), "tree of tensors") {
		t.Fatalf("got %v, want checkpoint.Load's error naming .W and what like needs", err)
	}
}
