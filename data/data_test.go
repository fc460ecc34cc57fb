package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
)

func TestShuffle(t *testing.T) {
	p := Shuffle(peel.Key(1), 50)
	s := slices.Clone(p)
	slices.Sort(s)
	for i, v := range s {
		if v != i {
			t.Fatalf("Shuffle is not a permutation: %v", p)
		}
	}
	if !slices.Equal(p, Shuffle(peel.Key(1), 50)) {
		t.Fatal("Shuffle is not deterministic")
	}
	if slices.Equal(p, Shuffle(peel.Key(2), 50)) {
		t.Fatal("different keys gave the same order")
	}
	if len(Shuffle(peel.Key(1), 0)) != 0 {
		t.Fatal("Shuffle(0) is not empty")
	}
	if err := peel.Catch(func() { Shuffle(peel.Key(1), -1) }); err == nil {
		t.Fatal("Shuffle(-1) did not panic")
	}
}

// rowsOf returns the first column of each row of a [n, …] f64 batch.
func rowsOf(b *peel.Tensor) []float64 {
	v := b.Float64s()
	w := 1
	for _, d := range b.Shape()[1:] {
		w *= d
	}
	out := make([]float64, 0, b.Shape()[0])
	for i := 0; i < len(v); i += w {
		out = append(out, v[i])
	}
	return out
}

func TestBatches(t *testing.T) {
	const n = 23
	// x [n, 2] holds row i as (i, 10i); y [n] holds i as i64.
	xv := make([]float64, 2*n)
	yv := make([]int64, n)
	for i := range n {
		xv[2*i], xv[2*i+1] = float64(i), float64(10*i)
		yv[i] = int64(i)
	}
	x, y := peel.FromFloat64s(xv, n, 2), peel.FromInt64s(yv)
	for _, bs := range []int{1, 5, 23, 30} {
		for _, dropLast := range []bool{false, true} {
			var seen []int
			var orders [][]float64
			batches := 0
			for epoch := range 2 {
				key := peel.FoldIn(peel.Key(3), int64(epoch))
				var order []float64
				for b := range Batches(key, bs, dropLast, x, y) {
					batches++
					if len(b) != 2 {
						t.Fatalf("batch of %d tensors", len(b))
					}
					xb, yb := b[0], b[1]
					m := xb.Shape()[0]
					if m > bs || (dropLast && m != bs) || yb.Shape()[0] != m || xb.Shape()[1] != 2 {
						t.Fatalf("batch shapes %v %v (batch size %d, dropLast %v)", xb.Shape(), yb.Shape(), bs, dropLast)
					}
					// The tensors stay aligned: row k of x is (y, 10y).
					xs, ys := xb.Float64s(), yb.Int64s()
					for k := range m {
						if xs[2*k] != float64(ys[k]) || xs[2*k+1] != 10*float64(ys[k]) {
							t.Fatalf("batch rows are misaligned: x %v, y %v", xs, ys)
						}
						if epoch == 0 {
							seen = append(seen, int(ys[k]))
						}
					}
					order = append(order, rowsOf(xb)...)
				}
				orders = append(orders, order)
			}
			if want := 2 * NumBatches(n, bs, dropLast); batches != want {
				t.Fatalf("batch size %d, dropLast %v: %d batches in two epochs, want %d", bs, dropLast, batches, want)
			}
			// Every row exactly once per epoch (all but the dropped tail).
			want := n
			if dropLast {
				want = n / bs * bs
			}
			s := slices.Clone(seen)
			slices.Sort(s)
			if len(s) != want || len(slices.Compact(slices.Clone(s))) != want {
				t.Fatalf("batch size %d, dropLast %v: rows %v, want %d distinct", bs, dropLast, seen, want)
			}
			if !dropLast && !slices.Equal(s, slices.Sorted(slices.Values(yv2int(yv)))) {
				t.Fatalf("rows %v do not cover 0…%d", s, n-1)
			}
			if bs < n && slices.Equal(orders[0], orders[1]) {
				t.Fatalf("two epochs with different keys gave the same order")
			}
		}
	}
	// Deterministic given the key; ranging again repeats the epoch.
	it := Batches(peel.Key(4), 4, false, x)
	collect := func(seq func(func([]*peel.Tensor) bool)) []float64 {
		var out []float64
		for b := range seq {
			out = append(out, rowsOf(b[0])...)
		}
		return out
	}
	a := collect(it)
	if !slices.Equal(a, collect(it)) || !slices.Equal(a, collect(Batches(peel.Key(4), 4, false, x))) {
		t.Fatal("Batches is not deterministic given the key")
	}
	if slices.Equal(a, collect(Batches(peel.Key(5), 4, false, x))) {
		t.Fatal("different keys gave the same batches")
	}
	// No key: in order.
	if got := collect(Batches(nil, 10, false, x)); !slices.Equal(got, rowsOf(x)) {
		t.Fatalf("unshuffled order %v", got)
	}
	// Breaking out of the loop stops the iteration.
	count := 0
	for range Batches(peel.Key(4), 2, false, x) {
		count++
		if count == 3 {
			break
		}
	}
	if count != 3 {
		t.Fatal("break did not stop")
	}
	// Misuse.
	for _, f := range []func(){
		func() { Batches(peel.Key(1), 4, false) },
		func() { Batches(peel.Key(1), 0, false, x) },
		func() { Batches(peel.Key(1), 4, false, x, peel.Ones(peel.Float64, n+1)) },
		func() { Batches(peel.Key(1), 4, false, x, nil) },
		func() { Batches(peel.Key(1), 4, false, peel.Scalar(1.0)) },
		func() { Batches(peel.FromInt64s([]int64{1}), 4, false, x) },
	} {
		err := peel.Catch(f)
		if err == nil || !strings.Contains(err.Error(), "data.Batches") {
			t.Fatalf("misuse gave %v, want a *peel.Error naming data.Batches", err)
		}
	}
}

func yv2int(v []int64) []int {
	out := make([]int, len(v))
	for i, e := range v {
		out[i] = int(e)
	}
	return out
}

func TestReadCSV(t *testing.T) {
	in := "a,b,c\n1, 2.5 ,\"3e2\"\n-4,\"5\",NaN\n# comment\n7,8,9\n"
	x, err := ReadCSV(strings.NewReader(in), CSVOptions{SkipRows: 1, Comment: '#'})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 2.5, 300, -4, 5, math.NaN(), 7, 8, 9}
	got := x.Float64s()
	if !slices.Equal(x.Shape(), []int{3, 3}) || len(got) != len(want) {
		t.Fatalf("shape %v", x.Shape())
	}
	for i := range want {
		if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Fatalf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	// Selected columns, another delimiter, float32.
	x, err = ReadCSV(strings.NewReader("1;2;3\n4;5;6\n"), CSVOptions{Comma: ';', Columns: []int{2, 0, 2}, DType: peel.Float32})
	if err != nil {
		t.Fatal(err)
	}
	if x.DType() != peel.Float32 || !slices.Equal(x.Shape(), []int{2, 3}) || !slices.Equal(x.Float32s(), []float32{3, 1, 3, 6, 4, 6}) {
		t.Fatalf("columns: %v %v", x.TypeString(), x.Float32s())
	}
	// A header with a quoted, comma-holding name.
	x, err = ReadCSV(strings.NewReader("\"x, m\",y\n1,2\n"), CSVOptions{SkipRows: 1})
	if err != nil || !slices.Equal(x.Float64s(), []float64{1, 2}) {
		t.Fatalf("quoted header: %v %v", x, err)
	}
	// Empty input.
	x, err = ReadCSV(strings.NewReader(""), CSVOptions{})
	if err != nil || !slices.Equal(x.Shape(), []int{0, 0}) {
		t.Fatalf("empty: %v %v", x, err)
	}
	x, err = ReadCSV(strings.NewReader("h1,h2\n"), CSVOptions{SkipRows: 1, Columns: []int{1}})
	if err != nil || !slices.Equal(x.Shape(), []int{0, 1}) {
		t.Fatalf("header only: %v %v", x, err)
	}
	// Errors.
	for _, c := range []struct {
		in   string
		opts CSVOptions
		msg  string
	}{
		{"1,2\n3,x\n", CSVOptions{}, "line 2"},
		{"1,2\n3\n", CSVOptions{}, "1 fields, want 2"},
		{"1,2\n", CSVOptions{Columns: []int{2}}, "out of range"},
		{"1,2\n", CSVOptions{Columns: []int{-1}}, "negative column"},
		{"1,\"2\n", CSVOptions{}, "data.ReadCSV"},
		{"1,\n", CSVOptions{}, "not a number"},
		{"1\n", CSVOptions{DType: peel.Int64}, "dtype"},
		{"1\n", CSVOptions{SkipRows: -1}, "SkipRows"},
	} {
		_, err := ReadCSV(strings.NewReader(c.in), c.opts)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ReadCSV(%q, %+v) error %v, want one containing %q", c.in, c.opts, err, c.msg)
		}
	}
}

// numpyHeader is np.save's header for a C-order array: the dict padded
// with spaces and a newline to a multiple of 64 bytes.
func numpyHeader(dict string) []byte {
	total := (10 + len(dict) + 1 + 63) / 64 * 64
	b := []byte("\x93NUMPY\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(total-10))
	b = append(b, dict...)
	b = append(b, strings.Repeat(" ", total-10-len(dict)-1)...)
	return append(b, '\n')
}

func TestNPYRoundTrip(t *testing.T) {
	cases := []*peel.Tensor{
		peel.FromFloat64s([]float64{0, 1.5, -2, math.Inf(1), math.NaN(), 5}, 2, 3),
		peel.FromFloat32s([]float32{1, -2, 3.25}),
		peel.FromInt64s([]int64{math.MinInt64, -1, 0, math.MaxInt64}, 2, 1, 2),
		peel.FromBools([]bool{true, false, true}, 3, 1),
		peel.Scalar(2.5),
		peel.Zeros(peel.Float64, 0, 4),
	}
	for _, x := range cases {
		var buf bytes.Buffer
		if err := WriteNPY(&buf, x); err != nil {
			t.Fatal(err)
		}
		if buf.Len()%64 != 0 && x.Size() == 0 {
			t.Fatalf("header of %v is not padded to 64 bytes", x.TypeString())
		}
		// Two arrays back to back read one after the other.
		b2 := append(slices.Clone(buf.Bytes()), buf.Bytes()...)
		r := bytes.NewReader(b2)
		for range 2 {
			y, err := ReadNPY(r)
			if err != nil {
				t.Fatalf("%v: %v", x.TypeString(), err)
			}
			if y.DType() != x.DType() || !slices.Equal(y.Shape(), x.Shape()) || y.String() != x.String() {
				t.Fatalf("round trip of %v gave %v", x, y)
			}
		}
		if _, err := ReadNPY(r); !errors.Is(err, io.EOF) {
			t.Fatalf("reading past the arrays: %v", err)
		}
	}
	// The bytes NumPy writes for np.arange(6.0).reshape(2, 3) (the
	// header format of numpy.lib.format, version 1.0).
	var buf bytes.Buffer
	x := peel.FromFloat64s([]float64{0, 1, 2, 3, 4, 5}, 2, 3)
	if err := WriteNPY(&buf, x); err != nil {
		t.Fatal(err)
	}
	want := numpyHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }")
	for i := range 6 {
		want = binary.LittleEndian.AppendUint64(want, math.Float64bits(float64(i)))
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteNPY bytes\n%q\nwant\n%q", buf.Bytes(), want)
	}
	// 1-D shapes have numpy's trailing comma, rank 0 an empty tuple.
	buf.Reset()
	WriteNPY(&buf, peel.FromBools([]bool{true}))
	if !bytes.Contains(buf.Bytes(), []byte("'shape': (1,), }")) || !bytes.Contains(buf.Bytes(), []byte("'|b1'")) {
		t.Fatalf("1-D header %q", buf.Bytes())
	}
	// A version 2.0 header and other key orders and quotes are read.
	dict := `{"shape": (2,), "fortran_order": False, "descr": "<i8"}`
	b := []byte("\x93NUMPY\x02\x00")
	b = binary.LittleEndian.AppendUint32(b, uint32(len(dict)+1))
	b = append(b, dict...)
	b = append(b, '\n')
	b = binary.LittleEndian.AppendUint64(b, 7)
	b = binary.LittleEndian.AppendUint64(b, uint64(1<<63))
	y, err := ReadNPY(bytes.NewReader(b))
	if err != nil || !slices.Equal(y.Int64s(), []int64{7, math.MinInt64}) {
		t.Fatalf("version 2.0: %v %v", y, err)
	}
	if err := WriteNPY(&buf, nil); err == nil {
		t.Fatal("WriteNPY(nil) gave no error")
	}
}

func TestReadNPYErrors(t *testing.T) {
	body := func(dict string, data []byte) []byte { return append(numpyHeader(dict), data...) }
	eight := make([]byte, 8)
	for _, c := range []struct {
		name string
		in   []byte
		msg  string
	}{
		{"empty", nil, "magic"},
		{"bad magic", []byte("NUMPY\x01\x00\x00\x00"), "magic"},
		{"version", []byte("\x93NUMPY\x04\x00\x00\x00"), "version 4.0"},
		{"short header", []byte("\x93NUMPY\x01\x00\x40\x00{'descr'"), "header"},
		{"int16", body("{'descr': '<i2', 'fortran_order': False, 'shape': (4,), }", eight), "unsupported dtype"},
		{"unicode", body("{'descr': '<U1', 'fortran_order': False, 'shape': (2,), }", eight), "unsupported dtype"},
		{"object", body("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", eight), "unsupported dtype"},
		{"byte order", body("{'descr': '!f8', 'fortran_order': False, 'shape': (1,), }", eight), "unsupported dtype"},
		{"structured", body("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }", eight), "descr"},
		{"missing key", body("{'descr': '<f8', 'shape': (1,), }", eight), "fortran_order"},
		{"unknown key", body("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'x': 1}", eight), "unknown key"},
		{"bad shape", body("{'descr': '<f8', 'fortran_order': False, 'shape': (1,-2), }", eight), "shape"},
		{"short data", body("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", eight), "unexpected EOF"},
		{"huge shape", body("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000000, 1000000000), }", eight), "too large"},
		{"above limit", body("{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }", eight), "allocation limit"},
		{"bool byte", body("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", []byte{1, 7}), "not 0 or 1"},
		{"trailing", body("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), } x", eight), "trailing"},
	} {
		_, err := ReadNPY(bytes.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.msg)
		}
	}
}

// FuzzReadNPY checks that ReadNPY returns an error, never panics, on
// any input, and that what it reads writes back to an equal array.
func FuzzReadNPY(f *testing.F) {
	for _, x := range []*peel.Tensor{
		peel.FromFloat64s([]float64{1, 2, 3, 4}, 2, 2),
		peel.FromFloat32s([]float32{1}),
		peel.FromInt64s([]int64{1, 2}),
		peel.FromBools([]bool{true, false}),
		peel.Scalar(1.0),
	} {
		var buf bytes.Buffer
		WriteNPY(&buf, x)
		f.Add(buf.Bytes())
	}
	f.Add(numpyHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999,), }"))
	f.Fuzz(func(t *testing.T, in []byte) {
		x, err := ReadNPY(bytes.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteNPY(&buf, x); err != nil {
			t.Fatal(err)
		}
		y, err := ReadNPY(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if y.DType() != x.DType() || !slices.Equal(y.Shape(), x.Shape()) || y.String() != x.String() {
			t.Fatalf("rewrite changed %v to %v", x, y)
		}
	})
}

// TestLoadCSV reads a plain and a gzipped file (the gzipped one named
// .csv: the magic bytes decide), and reports a missing file and a bad
// field with the path.
func TestLoadCSV(t *testing.T) {
	dir := t.TempDir()
	text := "a,b\n1,2\n3,4.5\n"
	plain := filepath.Join(dir, "plain.csv")
	if err := os.WriteFile(plain, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(text))
	zw.Close()
	zipped := filepath.Join(dir, "zipped.csv")
	if err := os.WriteFile(zipped, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, zipped} {
		x, err := LoadCSV(p, CSVOptions{SkipRows: 1})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !slices.Equal(x.Shape(), []int{2, 2}) || !slices.Equal(x.Float64s(), []float64{1, 2, 3, 4.5}) {
			t.Errorf("%s: %v %v", p, x.Shape(), x.Float64s())
		}
	}
	if _, err := LoadCSV(filepath.Join(dir, "missing.csv"), CSVOptions{}); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadCSV(plain, CSVOptions{}); err == nil || !strings.Contains(err.Error(), "plain.csv") {
		t.Errorf("a header read as numbers: %v", err)
	}
}

// TestReadNPYLayouts: the arrays NumPy writes by default in common cases
// read as they mean: Fortran order (np.asfortranarray, a transposed
// array saved as is) into peel's row-major layout, big-endian bytes, and
// every dtype peel shares with NumPy (f2, f4, f8, i4, i8, u1, b1); the
// shared dtypes round trip through WriteNPY. The bytes are written by
// hand here; CI's numpy script checks the same against numpy itself.
func TestReadNPYLayouts(t *testing.T) {
	body := func(dict string, data []byte) []byte { return append(numpyHeader(dict), data...) }
	// [[1, 2, 3], [4, 5, 6]] in Fortran order is 1 4 2 5 3 6.
	var f8 []byte
	for _, v := range []float64{1, 4, 2, 5, 3, 6} {
		f8 = binary.LittleEndian.AppendUint64(f8, math.Float64bits(v))
	}
	x, err := ReadNPY(bytes.NewReader(body("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", f8)))
	if err != nil || !slices.Equal(x.Shape(), []int{2, 3}) || !slices.Equal(x.Float64s(), []float64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("Fortran order: %v %v", x, err)
	}
	var be []byte
	for _, v := range []int32{-2, 70000} {
		be = binary.BigEndian.AppendUint32(be, uint32(v))
	}
	x, err = ReadNPY(bytes.NewReader(body("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", be)))
	if err != nil || x.DType() != peel.Int32 || !slices.Equal(x.Int32s(), []int32{-2, 70000}) {
		t.Fatalf("big-endian i4: %v %v", x, err)
	}
	var bf []byte
	for _, v := range []float64{0.5, -3} {
		bf = binary.BigEndian.AppendUint64(bf, math.Float64bits(v))
	}
	// Fortran and big-endian together, rank 3: [2, 1, 1].
	x, err = ReadNPY(bytes.NewReader(body("{'descr': '>f8', 'fortran_order': True, 'shape': (2, 1, 1), }", bf)))
	if err != nil || !slices.Equal(x.Float64s(), []float64{0.5, -3}) {
		t.Fatalf("big-endian Fortran f8: %v %v", x, err)
	}
	x, err = ReadNPY(bytes.NewReader(body("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", []byte{0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c})))
	if err != nil || x.DType() != peel.Float16 || !slices.Equal(x.Float32s(), []float32{1, -2, float32(math.Inf(1))}) {
		t.Fatalf("f2: %v %v", x, err)
	}
	for _, orig := range []*peel.Tensor{
		peel.AsType(peel.FromFloat64s([]float64{1.5, -2, 65504}, 3), peel.Float16),
		peel.FromInt32s([]int32{math.MinInt32, 0, math.MaxInt32}, 3),
		peel.FromUint8s([]uint8{0, 7, 255}, 3),
		peel.FromFloat32s([]float32{1, 2, 3, 4}, 2, 2),
	} {
		var buf bytes.Buffer
		if err := WriteNPY(&buf, orig); err != nil {
			t.Fatalf("WriteNPY %s: %v", orig.TypeString(), err)
		}
		back, err := ReadNPY(&buf)
		if err != nil || back.DType() != orig.DType() || !slices.Equal(peel.AsType(back, peel.Float64).Float64s(), peel.AsType(orig, peel.Float64).Float64s()) {
			t.Fatalf("%s round trip: %v %v", orig.TypeString(), back, err)
		}
	}
	if err := WriteNPY(new(bytes.Buffer), peel.AsType(peel.FromFloat64s([]float64{1}), peel.BFloat16)); err == nil {
		t.Fatal("WriteNPY of bf16: no error")
	}
}
