package checkpoint_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
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

// TestLoadIntoZeroTree: loading into a zero-valued tree (nil tensors:
// empty subtrees, no leaves) names checkpoint.Load, the file's tensors
// no leaf names, and what like is for.
func TestLoadIntoZeroTree(t *testing.T) {
	type mlp struct{ W, B *peel.Tensor }
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := checkpoint.Save(path, mlp{peel.Ones(peel.Float32, 2, 2), peel.Zeros(peel.Float32, 2)}); err != nil {
		t.Fatal(err)
	}
	_, err := checkpoint.Load(path, mlp{})
	var pe *peel.Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "checkpoint.Load") || !strings.Contains(err.Error(), `"W"`) || !strings.Contains(err.Error(), "empty subtree") || !strings.Contains(err.Error(), "tree of tensors") {
		t.Fatalf("got %v, want checkpoint.Load's error naming W and what like needs", err)
	}
}

// TestForeignDTypes: the format's dtypes peel has no type for are read
// into the peel dtype that holds every value (I8, I16, U16 → i32; U32,
// U64 → i64; F8_E5M2, F8_E4M3 → f32), checked at their extremes, and a
// U64 beyond int64 is refused naming the tensor and the element. The
// files are written by hand (little-endian), as other frameworks do.
func TestForeignDTypes(t *testing.T) {
	le := func(k int, vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			for j := range k {
				b = append(b, byte(v>>(8*j)))
			}
		}
		return b
	}
	for _, c := range []struct {
		dtype string
		data  []byte
		want  []float64
		dt    peel.DType
	}{
		{"I8", le(1, 0x80, 0x7f, 0xff, 0), []float64{-128, 127, -1, 0}, peel.Int32},
		{"I16", le(2, 0x8000, 0x7fff, 0xffff, 1), []float64{-32768, 32767, -1, 1}, peel.Int32},
		{"U16", le(2, 0xffff, 0, 1, 0x8000), []float64{65535, 0, 1, 32768}, peel.Int32},
		{"U32", le(4, 0xffffffff, 0, 7, 0x80000000), []float64{4294967295, 0, 7, 2147483648}, peel.Int64},
		{"U64", le(8, 1<<53, 0, 9, 12345), []float64{1 << 53, 0, 9, 12345}, peel.Int64},
		{"F8_E5M2", []byte{0x3c, 0xc0, 0x7c, 0x01}, []float64{1, -2, math.Inf(1), 0x1p-16}, peel.Float32},
		{"F8_E4M3", []byte{0x38, 0x7e, 0xb8, 0x01}, []float64{1, 448, -1, 0x1p-9}, peel.Float32},
	} {
		size := len(c.data) / 4
		b := safetensors(fmt.Sprintf(`{"x":{"dtype":%q,"shape":[4],"data_offsets":[0,%d]}}`, c.dtype, 4*size), c.data)
		f, err := checkpoint.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", c.dtype, err)
		}
		x, err := f.Tensor("x")
		if err != nil {
			t.Fatalf("%s: %v", c.dtype, err)
		}
		if x.DType() != c.dt {
			t.Fatalf("%s read as %v, want %v", c.dtype, x.DType(), c.dt)
		}
		got := peel.AsType(x, peel.Float64).Float64s()
		for i, w := range c.want {
			if got[i] != w {
				t.Fatalf("%s element %d: %v, want %v", c.dtype, i, got[i], w)
			}
		}
	}
	nan := safetensors(`{"x":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}`, []byte{0x7f})
	f, _ := checkpoint.NewReader(bytes.NewReader(nan), int64(len(nan)))
	if x, err := f.Tensor("x"); err != nil || !math.IsNaN(float64(x.Float32s()[0])) {
		t.Fatalf("F8_E4M3 0x7f: %v %v, want NaN", x, err)
	}
	big := safetensors(`{"big":{"dtype":"U64","shape":[2],"data_offsets":[0,16]}}`, le(8, 3, 1<<63))
	f, _ = checkpoint.NewReader(bytes.NewReader(big), int64(len(big)))
	if _, err := f.Tensor("big"); err == nil || !strings.Contains(err.Error(), `tensor "big" (U64, read as i64): element 1 is 9223372036854775808`) {
		t.Fatalf("U64 beyond int64: got %v", err)
	}
}

// TestOptionalLeaves: a tree with a nil tensor (a layer without bias)
// saves only its tensors and loads back with nil at the same place.
func TestOptionalLeaves(t *testing.T) {
	type layer struct{ W, B *peel.Tensor }
	path := filepath.Join(t.TempDir(), "m.safetensors")
	w := peel.FromFloat64s([]float64{1, 2, 3})
	if err := checkpoint.Save(path, layer{W: w}); err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	names := c.Names()
	c.Close()
	if len(names) != 1 || names[0] != "W" {
		t.Errorf("the file holds %v, want [W]", names)
	}
	got, err := checkpoint.Load(path, layer{W: peel.ZerosLike(w)})
	if err != nil {
		t.Fatal(err)
	}
	if got.B != nil || got.W == nil || got.W.Float64s()[2] != 3 {
		t.Errorf("loaded %+v", got)
	}
}

// TestLayoutByHand: the offsets, checked by value both ways. A file
// written by hand with its tensors' bytes in another order than their
// names (and one tensor empty) reads back each tensor's own values; and
// the bytes Save writes, taken apart here by the format's definition
// (an 8-byte little-endian header size, the JSON header, then each
// tensor's little-endian bytes at data_offsets from the end of the
// header), hold each tensor's values, packed in order without gaps.
func TestLayoutByHand(t *testing.T) {
	f64 := func(vs ...float64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	data := append(append(f64(7, 8, 9), f64(1, 2)...), f64(3, 4, 5)...)
	file := safetensors(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[24,40]},`+
		`"b":{"dtype":"F64","shape":[3],"data_offsets":[40,64]},`+
		`"c":{"dtype":"F64","shape":[3],"data_offsets":[0,24]},`+
		`"e":{"dtype":"F64","shape":[0],"data_offsets":[24,24]}}`, data)
	r, err := checkpoint.NewReader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]float64{"a": {1, 2}, "b": {3, 4, 5}, "c": {7, 8, 9}, "e": {}} {
		x, err := r.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := x.Float64s(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("tensor %s = %v, want %v", name, got, want)
		}
	}

	// Save, then read by hand.
	tensors := map[string]*peel.Tensor{
		"w": peel.FromFloat64s([]float64{1.5, -2, 3, 4, 5, 6}, 2, 3),
		"v": peel.AsType(peel.FromFloat64s([]float64{10, 20, 30}), peel.Float32),
		"n": peel.FromInt64s([]int64{-1, 1 << 40}, 2),
		"z": peel.FromFloat64s(nil, 0),
		"s": peel.Scalar(0.25),
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := checkpoint.Save(path, tensors); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	if n%8 != 0 || 8+n > uint64(len(b)) {
		t.Fatalf("header size %d of a %d-byte file", n, len(b))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	body := b[8+n:]
	type span struct{ s, e int64 }
	var spans []span
	for name, x := range tensors {
		var e struct {
			DType       string  `json:"dtype"`
			Shape       []int   `json:"shape"`
			DataOffsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(header[`["`+name+`"]`], &e); err != nil {
			t.Fatalf("%s: %v in %s", name, err, b[8:8+n])
		}
		if len(e.DataOffsets) != 2 || e.DataOffsets[0] < 0 || e.DataOffsets[0] > e.DataOffsets[1] || e.DataOffsets[1] > int64(len(body)) {
			t.Fatalf("%s: data_offsets %v of %d bytes of data", name, e.DataOffsets, len(body))
		}
		s, end := e.DataOffsets[0], e.DataOffsets[1]
		spans = append(spans, span{s, end})
		raw := body[s:end]
		var got []float64
		switch e.DType {
		case "F64":
			for i := 0; i < len(raw); i += 8 {
				got = append(got, math.Float64frombits(binary.LittleEndian.Uint64(raw[i:])))
			}
		case "F32":
			for i := 0; i < len(raw); i += 4 {
				got = append(got, float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[i:]))))
			}
		case "I64":
			for i := 0; i < len(raw); i += 8 {
				got = append(got, float64(int64(binary.LittleEndian.Uint64(raw[i:]))))
			}
		default:
			t.Fatalf("%s: dtype %s", name, e.DType)
		}
		if want := peel.AsType(x, peel.Float64).Float64s(); fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(e.Shape) != fmt.Sprint(x.Shape()) {
			t.Fatalf("%s: %v of shape %v in the file, want %v of shape %v", name, got, e.Shape, want, x.Shape())
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.s, b.s)*2 + cmp.Compare(a.e, b.e) })
	at := int64(0)
	for _, sp := range spans {
		if sp.s != at {
			t.Fatalf("spans %v: a gap or overlap at %d", spans, at)
		}
		at = sp.e
	}
	if at != int64(len(body)) {
		t.Fatalf("the data end at %d of %d bytes", at, len(body))
	}
}
