package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// npyDescr maps the dtypes ReadNPY and WriteNPY support, those peel
// shares with NumPy, to NumPy's little-endian type strings.
var npyDescr = map[peel.DType]string{
	peel.Float16: "<f2",
	peel.Float32: "<f4",
	peel.Float64: "<f8",
	peel.Int32:   "<i4",
	peel.Int64:   "<i8",
	peel.Uint8:   "|u1",
	peel.Bool:    "|b1",
}

// npyDType returns the peel dtype of a NumPy type string and whether its
// bytes are big-endian: any byte order ('<', '>', '=' native, '|' not
// applicable) of a dtype in npyDescr.
func npyDType(descr string) (peel.DType, bool, bool) {
	if len(descr) < 2 {
		return 0, false, false
	}
	order, code := descr[0], descr[1:]
	big := order == '>' || (order == '=' && !nativeLittle)
	if order != '<' && order != '>' && order != '=' && order != '|' {
		return 0, false, false
	}
	for dt, d := range npyDescr {
		if d[1:] == code {
			return dt, big && dt.Size() > 1, true
		}
	}
	return 0, false, false
}

// nativeLittle reports whether this machine is little-endian (numpy's '='
// byte order).
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// ReadNPY reads one array in NumPy's .npy format (versions 1.0, 2.0 and
// 3.0) from r: a float16 ('f2'), float32 ('f4'), float64 ('f8'), int32
// ('i4'), int64 ('i8'), uint8 ('u1') or bool ('b1') array, of either
// byte order, in C or Fortran order (read into peel's row-major layout),
// of any shape (a rank-0 array included). It reads exactly the header
// and the data, so several arrays can follow each other in r. It
// returns an error for a missing or malformed header, another dtype (a
// structured, object or unicode one names itself), a shape whose size
// overflows or exceeds peel.MaxAllocBytes, bool bytes other than 0 and
// 1, or data shorter than the shape (io.ErrUnexpectedEOF). It never
// panics on malformed input.
func ReadNPY(r io.Reader) (*peel.Tensor, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("data.ReadNPY: reading the magic string: %w", err)
	}
	if string(pre[:6]) != npyMagic {
		return nil, errors.New("data.ReadNPY: not a .npy file (bad magic string)")
	}
	major, minor := pre[6], pre[7]
	var hlen int
	switch major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("data.ReadNPY: reading the header length: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("data.ReadNPY: reading the header length: %w", err)
		}
		n := binary.LittleEndian.Uint32(b[:])
		if n > 1<<20 {
			return nil, fmt.Errorf("data.ReadNPY: header length %d is implausibly large", n)
		}
		hlen = int(n)
	default:
		return nil, fmt.Errorf("data.ReadNPY: unsupported format version %d.%d", major, minor)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("data.ReadNPY: reading the %d-byte header: %w", hlen, err)
	}
	h, err := parseNPYHeader(string(hdr))
	if err != nil {
		return nil, fmt.Errorf("data.ReadNPY: %w", err)
	}
	dt, bigEndian, ok := npyDType(h.descr)
	if !ok {
		return nil, fmt.Errorf("data.ReadNPY: unsupported dtype %q (want f2, f4, f8, i4, i8, u1 or b1, of either byte order)", h.descr)
	}
	size := int64(1)
	for _, d := range h.shape {
		if d < 0 {
			return nil, fmt.Errorf("data.ReadNPY: negative dimension in shape %v", h.shape)
		}
		if d > 0 && size > math.MaxInt64/int64(dt.Size())/int64(d) {
			return nil, fmt.Errorf("data.ReadNPY: shape %v is too large", h.shape)
		}
		size *= int64(d)
	}
	nbytes := size * int64(dt.Size())
	if nbytes > peel.MaxAllocBytes() {
		return nil, fmt.Errorf("data.ReadNPY: shape %v needs %d bytes, above the allocation limit %d", h.shape, nbytes, peel.MaxAllocBytes())
	}
	// Read through a limited reader into a growing buffer, so that a
	// header claiming a huge shape over a short input allocates only what
	// the input holds.
	var buf bytes.Buffer
	got, err := buf.ReadFrom(io.LimitReader(r, nbytes))
	if err != nil {
		return nil, fmt.Errorf("data.ReadNPY: reading the data: %w", err)
	}
	if got != nbytes {
		return nil, fmt.Errorf("data.ReadNPY: %d data bytes for shape %v (%d bytes): %w", got, h.shape, nbytes, io.ErrUnexpectedEOF)
	}
	b := buf.Bytes()
	if bigEndian {
		k := dt.Size()
		for i := 0; i+k <= len(b); i += k {
			for j := 0; j < k/2; j++ {
				b[i+j], b[i+k-1-j] = b[i+k-1-j], b[i+j]
			}
		}
	}
	n := int(size)
	// A Fortran-order array's data are the C-order data of its reversed
	// shape: read them so, then transpose.
	shape := slices.Clone(h.shape)
	if h.fortran {
		slices.Reverse(shape)
	}
	var t *peel.Tensor
	var boolErr error
	err = peel.Catch(func() {
		switch dt {
		case peel.Float16:
			v := make([]float32, n)
			for i := range v {
				v[i] = backend.F16(binary.LittleEndian.Uint16(b[2*i:])).Float32()
			}
			t = peel.FromFloat16s(v, shape...) // exact: each value is a float16
		case peel.Float32:
			v := make([]float32, n)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
			t = peel.FromFloat32s(v, shape...)
		case peel.Float64:
			v := make([]float64, n)
			for i := range v {
				v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
			}
			t = peel.FromFloat64s(v, shape...)
		case peel.Int32:
			v := make([]int32, n)
			for i := range v {
				v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
			}
			t = peel.FromInt32s(v, shape...)
		case peel.Int64:
			v := make([]int64, n)
			for i := range v {
				v[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
			}
			t = peel.FromInt64s(v, shape...)
		case peel.Uint8:
			t = peel.FromUint8s(slices.Clone(b[:n]), shape...)
		case peel.Bool:
			v := make([]bool, n)
			for i, c := range b {
				if c > 1 {
					boolErr = fmt.Errorf("data.ReadNPY: bool element %d is byte %d, not 0 or 1", i, c)
					return
				}
				v[i] = c == 1
			}
			t = peel.FromBools(v, shape...)
		}
		if h.fortran && len(shape) > 1 {
			perm := make([]int, len(shape))
			for i := range perm {
				perm[i] = len(shape) - 1 - i
			}
			t = peel.Clone(peel.Transpose(t, perm...))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("data.ReadNPY: %w", err)
	}
	if boolErr != nil {
		return nil, boolErr
	}
	return t, nil
}

// npyHeader is the parsed header dictionary of a .npy file.
type npyHeader struct {
	descr   string
	fortran bool
	shape   []int
}

// parseNPYHeader parses the Python dict literal of a .npy header:
// {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), } with any
// key order and the trailing spaces and newline of the padding.
func parseNPYHeader(s string) (npyHeader, error) {
	var h npyHeader
	p := &npyParser{s: strings.TrimRight(s, " \n\x00")}
	if !p.eat('{') {
		return h, errors.New("header is not a dict literal")
	}
	seen := map[string]bool{}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return h, err
		}
		if seen[key] {
			return h, fmt.Errorf("header repeats key %q", key)
		}
		seen[key] = true
		p.space()
		if !p.eat(':') {
			return h, fmt.Errorf("header: no ':' after key %q", key)
		}
		p.space()
		switch key {
		case "descr":
			if h.descr, err = p.str(); err != nil {
				return h, fmt.Errorf("header descr: %w", err)
			}
		case "fortran_order":
			switch {
			case p.word("True"):
				h.fortran = true
			case p.word("False"):
			default:
				return h, errors.New("header fortran_order is not True or False")
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return h, fmt.Errorf("header shape: %w", err)
			}
		default:
			return h, fmt.Errorf("header has unknown key %q", key)
		}
		p.space()
		if p.eat(',') {
			continue
		}
		p.space()
		if !p.eat('}') {
			return h, errors.New("header: expected ',' or '}'")
		}
		break
	}
	p.space()
	if p.i != len(p.s) {
		return h, errors.New("header: trailing characters after the dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("header has no key %q", k)
		}
	}
	return h, nil
}

// npyParser scans a header literal.
type npyParser struct {
	s string
	i int
}

func (p *npyParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *npyParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *npyParser) word(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// str parses a quoted string without escapes.
func (p *npyParser) str() (string, error) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", errors.New("expected a quoted string")
	}
	q := p.s[p.i]
	j := strings.IndexByte(p.s[p.i+1:], q)
	if j < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+j]
	p.i += j + 2
	return v, nil
}

// tuple parses a tuple of non-negative integers: (), (3,), (2, 3).
func (p *npyParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("expected a tuple")
	}
	shape := []int{}
	for {
		p.space()
		if p.eat(')') {
			return shape, nil
		}
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		if j == p.i {
			return nil, errors.New("expected a dimension")
		}
		d, err := strconv.Atoi(p.s[p.i:j])
		if err != nil || d > math.MaxInt32*1024 {
			return nil, fmt.Errorf("dimension %q is out of range", p.s[p.i:j])
		}
		p.i = j
		shape = append(shape, d)
		p.space()
		if p.eat(',') {
			continue
		}
		p.space()
		if !p.eat(')') {
			return nil, errors.New("expected ',' or ')' in the tuple")
		}
		return shape, nil
	}
}

// WriteNPY writes the concrete tensor t to w in .npy format: version 1.0
// (2.0 when the header does not fit in 65535 bytes), little-endian, C
// order, with the header padded so that the data start at a multiple of
// 64 bytes. Float16, Float32, Float64, Int32, Int64, Uint8 and Bool
// tensors map to '<f2', '<f4', '<f8', '<i4', '<i8', '|u1' and '|b1'
// (NumPy has no bfloat16: convert it first). It returns an error if t is
// nil or traced, of another dtype, or writing fails.
func WriteNPY(w io.Writer, t *peel.Tensor) error {
	if t == nil {
		return errors.New("data.WriteNPY: nil tensor")
	}
	if !t.IsConcrete() {
		return errors.New("data.WriteNPY: the tensor is traced; WriteNPY needs concrete data")
	}
	descr, ok := npyDescr[t.DType()]
	if !ok {
		return fmt.Errorf("data.WriteNPY: unsupported dtype %v", t.DType())
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr)
	for i, d := range t.Shape() {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(d))
	}
	if t.Rank() == 1 {
		sb.WriteString(",")
	}
	sb.WriteString("), }")
	dict := sb.String()
	// magic (6) + version (2) + length (2 or 4) + dict + padding + '\n'.
	version, lenBytes := byte(1), 2
	total := func() int { return (6 + 2 + lenBytes + len(dict) + 1 + 63) / 64 * 64 }
	if total()-10 > math.MaxUint16 {
		version, lenBytes = 2, 4
	}
	hlen := total() - 6 - 2 - lenBytes
	var head bytes.Buffer
	head.WriteString(npyMagic)
	head.WriteByte(version)
	head.WriteByte(0)
	if lenBytes == 2 {
		binary.Write(&head, binary.LittleEndian, uint16(hlen))
	} else {
		binary.Write(&head, binary.LittleEndian, uint32(hlen))
	}
	head.WriteString(dict)
	head.WriteString(strings.Repeat(" ", hlen-len(dict)-1))
	head.WriteByte('\n')
	if _, err := w.Write(head.Bytes()); err != nil {
		return fmt.Errorf("data.WriteNPY: %w", err)
	}
	var data []byte
	switch t.DType() {
	case peel.Float16:
		v := t.Float32s()
		data = make([]byte, 2*len(v))
		for i, e := range v {
			binary.LittleEndian.PutUint16(data[2*i:], uint16(backend.F16FromFloat32(e))) // exact
		}
	case peel.Int32:
		v := t.Int32s()
		data = make([]byte, 4*len(v))
		for i, e := range v {
			binary.LittleEndian.PutUint32(data[4*i:], uint32(e))
		}
	case peel.Uint8:
		data = slices.Clone(t.Uint8s())
	case peel.Float32:
		v := t.Float32s()
		data = make([]byte, 4*len(v))
		for i, e := range v {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(e))
		}
	case peel.Float64:
		v := t.Float64s()
		data = make([]byte, 8*len(v))
		for i, e := range v {
			binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(e))
		}
	case peel.Int64:
		v := t.Int64s()
		data = make([]byte, 8*len(v))
		for i, e := range v {
			binary.LittleEndian.PutUint64(data[8*i:], uint64(e))
		}
	case peel.Bool:
		v := t.Bools()
		data = make([]byte, len(v))
		for i, e := range v {
			if e {
				data[i] = 1
			}
		}
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("data.WriteNPY: %w", err)
	}
	return nil
}
