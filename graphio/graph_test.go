package graphio_test

import (
	"bytes"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu" // the primitives the graphs name, and a backend
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// TestDecodeRefuses: hand-made graphs that lie are refused with a
// reason.
func TestDecodeRefuses(t *testing.T) {
	be := cpu.New()
	g := &interp.Graph{In: []*interp.Var{{ID: 0, Aval: interp.Aval{Shape: []int{2}, DType: backend.Float64}}}}
	g.Out = g.In
	good, err := graphio.Encode(g, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graphio.Decode(good, be); err != nil {
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
		_, err := graphio.Decode(c.data, be)
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
