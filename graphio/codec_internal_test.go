package graphio

import (
	"bytes"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel/interp"
)

// codecSample has a field of every kind StructCodec encodes.
type codecSample struct {
	N     int
	B     bool
	F     float64
	S     string
	D     interp.DType
	Ints  []int
	Pairs [][2]int
	Names []string
	Inner struct {
		Flags []bool
		Arr   [3]int
	}
}

func encodeParams(c *Codec, v any) []byte {
	w := &Writer{g: &graphWriter{}}
	c.encode(w, v)
	return w.buf
}

// TestStructCodecRoundTrip: random values of every field kind decode to
// themselves, nil and empty slices apart; every proper prefix of an
// encoding is refused, without a panic.
func TestStructCodecRoundTrip(t *testing.T) {
	c := StructCodec[codecSample]()
	ints := func() *rapid.Generator[[]int] {
		return rapid.OneOf(rapid.Just[[]int](nil), rapid.SliceOfN(rapid.Int(), 0, 5))
	}
	rapid.Check(t, func(t *rapid.T) {
		var v codecSample
		v.N = rapid.Int().Draw(t, "n")
		v.B = rapid.Bool().Draw(t, "b")
		v.F = rapid.Float64().Draw(t, "f")
		v.S = rapid.String().Draw(t, "s")
		v.D = interp.DType(rapid.IntRange(1, 8).Draw(t, "dtype"))
		v.Ints = ints().Draw(t, "ints")
		for range rapid.IntRange(0, 3).Draw(t, "pairs") {
			v.Pairs = append(v.Pairs, [2]int{rapid.Int().Draw(t, "p0"), rapid.Int().Draw(t, "p1")})
		}
		v.Names = rapid.OneOf(rapid.Just[[]string](nil), rapid.SliceOfN(rapid.String(), 0, 3)).Draw(t, "names")
		v.Inner.Flags = rapid.OneOf(rapid.Just[[]bool](nil), rapid.SliceOfN(rapid.Bool(), 0, 4)).Draw(t, "flags")
		for i := range v.Inner.Arr {
			v.Inner.Arr[i] = rapid.Int().Draw(t, "arr")
		}
		b := encodeParams(c, v)
		r := &Reader{data: b}
		got := c.decode(r)
		if r.err != nil || r.off != len(b) {
			t.Fatalf("decoding %x: %v (read %d of %d bytes)", b, r.err, r.off, len(b))
		}
		if !reflect.DeepEqual(got, v) && !(v.F != v.F) {
			t.Fatalf("decoded %+v, want %+v", got, v)
		}
		for n := range len(b) {
			r := &Reader{data: b[:n]}
			c.decode(r)
			if r.err == nil {
				t.Fatalf("the prefix %x of %x decoded", b[:n], b)
			}
		}
	})
}

// TestStructCodecBytes: the example of docs/export-format.md.
func TestStructCodecBytes(t *testing.T) {
	type reshape struct{ Shape []int }
	if got := encodeParams(StructCodec[reshape](), reshape{Shape: []int{2, 3}}); !bytes.Equal(got, []byte{3, 4, 6}) {
		t.Fatalf("Shape [2 3] is % x, want 03 04 06", got)
	}
}

// TestStructCodecRefuses: a struct with a field the encoding cannot hold
// panics when its codec is made (in package initialization).
func TestStructCodecRefuses(t *testing.T) {
	for name, f := range map[string]func(){
		"unexported": func() { StructCodec[struct{ n int }]() },
		"func":       func() { StructCodec[struct{ F func() }]() },
		"pointer":    func() { StructCodec[struct{ P *int }]() },
		"map":        func() { StructCodec[struct{ M map[string]int }]() },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: StructCodec accepted it", name)
				}
			}()
			f()
		}()
	}
}
