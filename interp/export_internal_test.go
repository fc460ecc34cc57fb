package interp

import (
	"bytes"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel/backend"
)

// codecSample has a field of every kind StructCodec encodes.
type codecSample struct {
	N     int
	B     bool
	F     float64
	S     string
	D     DType
	Ints  []int
	Pairs [][2]int
	Names []string
	Inner struct {
		Flags []bool
		Arr   [3]int
	}
}

func encodeParams(c *ParamCodec, v any) []byte {
	w := &ParamWriter{g: &graphWriter{}}
	c.Encode(w, v)
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
		v.D = DType(rapid.IntRange(1, 8).Draw(t, "dtype"))
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
		r := &ParamReader{data: b}
		got := c.Decode(r)
		if r.err != nil || r.off != len(b) {
			t.Fatalf("decoding %x: %v (read %d of %d bytes)", b, r.err, r.off, len(b))
		}
		if !reflect.DeepEqual(got, v) && !(v.F != v.F) {
			t.Fatalf("decoded %+v, want %+v", got, v)
		}
		for n := range len(b) {
			r := &ParamReader{data: b[:n]}
			c.Decode(r)
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

// TestDecodeGraphRefuses: hand-made graphs that lie are refused with a
// reason.
func TestDecodeGraphRefuses(t *testing.T) {
	be := DefaultBackend()
	var good []byte
	{
		w := &graphWriter{}
		g := &Graph{In: []*Var{{ID: 0, Aval: Aval{Shape: []int{2}, DType: backend.Float64}}}}
		g.Out = g.In
		if err := w.graph(g); err != nil {
			t.Fatal(err)
		}
		good = w.buf
	}
	if _, err := DecodeGraph(good, be); err != nil {
		t.Fatalf("the identity graph: %v", err)
	}
	u := binaryUvarint
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"reference ahead", []byte{1, 4, 1, 2, 0, 0, 1, 1}, "a reference to value 1"},
		{"huge count", append([]byte{0}, u(1<<40)...), "a count of"},
		{"bad dtype", []byte{1, 9, 0, 0, 0, 0}, "unknown dtype"},
		{"huge shape", []byte{1, 4, 2, 0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0}, "a value of type"},
		{"constant past the end", []byte{0, 1, 4, 1, 100, 0, 1, 2, 3}, "bytes left"},
		{"strided constant reaching past its buffer", []byte{0, 1, 4, 1, 3, 1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "strided constant"},
		{"unknown primitive", append([]byte{1, 4, 0, 0, 1, 3}, append([]byte("nop"), 0, 1, 0, 1, 4, 0, 1, 1)...), `unknown primitive "nop"`},
		{"wrong result type", append([]byte{1, 4, 0, 0, 1, 3}, append([]byte("neg"), 0, 1, 0, 1, 3, 0, 1, 1)...), "neg gives f64[], the file records f32[]"},
		{"operands refused", append([]byte{1, 4, 0, 0, 1, 3}, append([]byte("add"), 0, 1, 0, 1, 4, 0, 1, 1)...), "add does not accept its operands"},
		{"trailing bytes", append(bytes.Clone(good), 0), "bytes after the graph"},
	} {
		_, err := DecodeGraph(c.data, be)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

func binaryUvarint(v uint64) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
