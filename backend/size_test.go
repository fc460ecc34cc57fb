package backend_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel/backend"
)

func TestMulAddSize(t *testing.T) {
	mul := []struct {
		a, b, want int
		ok         bool
	}{
		{0, math.MaxInt, 0, true},
		{1, math.MaxInt, math.MaxInt, true},
		{2, 1 << 62, 0, false}, // 2^63: one bit over
		{1 << 31, 1 << 32, 0, false},
		{1 << 31, 1 << 31, 1 << 62, true},
		{3, (math.MaxInt / 3) + 1, 0, false},
		{3, math.MaxInt / 3, math.MaxInt / 3 * 3, true},
		{math.MaxInt, math.MaxInt, 0, false},
		{-1, 2, 0, false},
		{2, math.MinInt, 0, false},
	}
	for _, c := range mul {
		if got, ok := backend.MulSize(c.a, c.b); got != c.want || ok != c.ok {
			t.Errorf("MulSize(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
	add := []struct {
		a, b, want int
		ok         bool
	}{
		{math.MaxInt, 0, math.MaxInt, true},
		{math.MaxInt, 1, 0, false},
		{1 << 62, 1 << 62, 0, false},
		{math.MinInt, -1, 0, false},
		{math.MinInt, math.MaxInt, -1, true},
		{math.MaxInt, math.MinInt, -1, true},
		{-5, 3, -2, true},
	}
	for _, c := range add {
		if got, ok := backend.AddSize(c.a, c.b); got != c.want || ok != c.ok {
			t.Errorf("AddSize(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

func TestCheckedSize(t *testing.T) {
	cases := []struct {
		shape []int
		want  int
		err   string // "" for none
	}{
		{nil, 1, ""},
		{[]int{2, 3}, 6, ""},
		{[]int{0, 1 << 62}, 0, ""},
		{[]int{math.MaxInt}, math.MaxInt, ""},
		{[]int{1 << 31, 1 << 31}, 1 << 62, ""},
		{[]int{1 << 31, 1 << 32}, 0, "too large"},
		{[]int{1 << 32, 1 << 32}, 0, "too large"},
		{[]int{1 << 62, 4}, 0, "too large"},
		{[]int{2305843009213693955, 4611686018427387906}, 0, "too large"}, // wraps to 6
		// A zero dimension empties any shape (issue 43, item 9): the
		// element count is checked, not the product of the other
		// dimensions.
		{[]int{math.MaxInt, math.MaxInt, 0}, 0, ""},
		{[]int{math.MaxInt, 0, 2, 4}, 0, ""},
		{[]int{0, math.MaxInt, math.MaxInt}, 0, ""},
		{[]int{1 << 62, 4, 0, -1}, 0, "negative dimension -1"},
		{[]int{1 << 62, 4, 1}, 0, "too large"},
		{[]int{2, -1}, 0, "negative dimension -1 in shape [2 -1]"},
		{[]int{math.MinInt}, 0, "negative"},
	}
	for _, c := range cases {
		n, err := backend.CheckedSize(c.shape)
		if c.err == "" {
			if err != nil || n != c.want {
				t.Errorf("CheckedSize(%v) = %d, %v; want %d", c.shape, n, err, c.want)
			}
			continue
		}
		var se *backend.SizeError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("CheckedSize(%v) = %d, %v; want a *SizeError saying %q", c.shape, n, err, c.err)
		}
	}
}

func TestAllocLimit(t *testing.T) {
	old := backend.SetMaxAllocBytes(1000)
	defer backend.SetMaxAllocBytes(old)
	if got := backend.SetMaxAllocBytes(-1); got != 1000 {
		t.Fatalf("SetMaxAllocBytes(-1) = %d", got)
	}
	if err := backend.CheckAlloc(backend.Float64, 125); err != nil {
		t.Fatalf("125 f64 at a limit of 1000 bytes: %v", err)
	}
	err := backend.CheckAlloc(backend.Float64, 126)
	var ae *backend.AllocError
	if !errors.As(err, &ae) {
		t.Fatalf("126 f64 at a limit of 1000 bytes: %v", err)
	}
	for _, s := range []string{"too large", "126 f64 elements", "1008 bytes", "1000 bytes"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not mention %q", err, s)
		}
	}
	// The byte count is exact even when it overflows every integer type.
	err = backend.CheckAlloc(backend.Float64, math.MaxInt)
	if !strings.Contains(err.Error(), "73786976294838206456 bytes") {
		t.Errorf("MaxInt f64: %v", err)
	}
	if _, err := backend.AllocSize(backend.Bool, []int{10, 101}); err == nil || !strings.Contains(err.Error(), "bool[10,101] needs 1010 bytes") {
		t.Errorf("AllocSize(bool, [10 101]): %v", err)
	}
	if _, err := backend.AllocSize(backend.Bool, []int{1 << 32, 1 << 32}); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Errorf("AllocSize(bool, [2^32 2^32]): %v", err)
	}
	if n, err := backend.AllocSize(backend.Int64, []int{0, 1 << 62}); n != 0 || err != nil {
		t.Errorf("AllocSize of an empty shape: %d, %v", n, err)
	}
	backend.SetMaxAllocBytes(0)
	if got, want := backend.MaxAllocBytes(), backend.DefaultMaxAllocBytes(); got != want || want <= 0 {
		t.Errorf("after SetMaxAllocBytes(0): %d, default %d", got, want)
	}
}
