package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/tree"
)

// FormatVersion is the version of peel's use of safetensors that Save
// writes into the metadata ("format_version").
const FormatVersion = "1"

// maxHeader bounds the JSON header Load accepts (safetensors' own
// readers refuse headers above 100 MB).
const maxHeader = 100 << 20

// dtypeNames maps peel's dtypes to safetensors' names.
var dtypeNames = map[peel.DType]string{
	peel.Float64: "F64", peel.Float32: "F32", peel.Float16: "F16", peel.BFloat16: "BF16",
	peel.Int64: "I64", peel.Int32: "I32", peel.Uint8: "U8", peel.Bool: "BOOL",
}

// foreign are the dtypes of the format that peel does not have, read
// into the peel dtype that holds every value exactly: size is the file's
// bytes per element, decode converts the little-endian elements of b
// into dst (a host slice of to), failing on a value to cannot hold.
var foreign = map[string]struct {
	size   int
	to     peel.DType
	decode func(b []byte, dst any) error
}{
	"I8": {1, peel.Int32, func(b []byte, dst any) error {
		return decodeInts(b, 1, dst.([]int32), func(u uint64) int64 { return int64(int8(u)) })
	}},
	"I16": {2, peel.Int32, func(b []byte, dst any) error {
		return decodeInts(b, 2, dst.([]int32), func(u uint64) int64 { return int64(int16(u)) })
	}},
	"U16": {2, peel.Int32, func(b []byte, dst any) error {
		return decodeInts(b, 2, dst.([]int32), func(u uint64) int64 { return int64(u) })
	}},
	"U32": {4, peel.Int64, func(b []byte, dst any) error {
		return decodeInts(b, 4, dst.([]int64), func(u uint64) int64 { return int64(u) })
	}},
	"U64": {8, peel.Int64, func(b []byte, dst any) error {
		d := dst.([]int64)
		for i := range d {
			u := binary.LittleEndian.Uint64(b[8*i:])
			if u > math.MaxInt64 {
				return fmt.Errorf("element %d is %d, beyond int64's range (peel has no uint64)", i, u)
			}
			d[i] = int64(u)
		}
		return nil
	}},
	"F8_E5M2": {1, peel.Float32, func(b []byte, dst any) error {
		// float8 e5m2 is float16's upper byte.
		d := dst.([]float32)
		for i, v := range b {
			d[i] = backend.F16(uint16(v) << 8).Float32()
		}
		return nil
	}},
	"F8_E4M3": {1, peel.Float32, func(b []byte, dst any) error {
		d := dst.([]float32)
		for i, v := range b {
			d[i] = e4m3(v)
		}
		return nil
	}},
}

// decodeInts sets d[i] to the i-th little-endian integer of k bytes of
// b, converted by conv.
func decodeInts[T int32 | int64](b []byte, k int, d []T, conv func(uint64) int64) error {
	for i := range d {
		var u uint64
		for j := k - 1; j >= 0; j-- {
			u = u<<8 | uint64(b[k*i+j])
		}
		d[i] = T(conv(u))
	}
	return nil
}

// e4m3 is the value of a float8 e4m3 (the "fn" variant torch and
// safetensors use: bias 7, no infinities, S.1111.111 is NaN).
func e4m3(v uint8) float32 {
	sign := float32(1)
	if v&0x80 != 0 {
		sign = -1
	}
	e, m := int(v>>3)&0xf, float64(v&7)
	switch {
	case e == 0xf && v&7 == 7:
		return float32(math.NaN())
	case e == 0:
		return sign * float32(math.Ldexp(m/8, -6))
	}
	return sign * float32(math.Ldexp(1+m/8, e-7))
}

// fileDType returns the peel dtype a tensor of the format's dtype name
// is read into, and the file's bytes per element.
func fileDType(name string) (peel.DType, int, bool) {
	if dt, ok := dtypeOf(name); ok {
		return dt, dt.Size(), true
	}
	if f, ok := foreign[name]; ok {
		return f.to, f.size, true
	}
	return 0, 0, false
}

func dtypeOf(name string) (peel.DType, bool) {
	for dt, n := range dtypeNames {
		if n == name {
			return dt, true
		}
	}
	return 0, false
}

// entry is a tensor's line of the header.
type entry struct {
	DType       string  `json:"dtype"`
	Shape       []int   `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"` // [begin, end): exactly two
}

// Name returns the tensor name Save gives a leaf of tree path p: p
// without its leading dot, or "." for a tree that is one tensor.
func Name(p string) string {
	if p == "" {
		return "."
	}
	return strings.TrimPrefix(p, ".")
}

func errorf(op, format string, args ...any) *peel.Error {
	return &peel.Error{Ops: []string{op}, Msg: fmt.Sprintf(format, args...)}
}

// Save writes the tensor leaves of t to path as a safetensors file,
// atomically: into a temporary file in path's directory, synced, then
// renamed over path (and the directory synced), so that path holds
// either its old content or the whole new checkpoint. The metadata
// records the format and its version, peel's version, and meta's
// entries (which must not use those keys). The file's mode is 0666
// less the process's umask, as os.Create, torch and numpy make files.
// A Save first removes the temporaries that Saves of the same path
// killed mid-write left behind: on unix each Save holds an advisory lock
// (flock) on its temporary until it has renamed it, and only unlocked
// ones named as Save names them are removed.
// It returns a *peel.Error when t is not a tree of concrete tensors, two
// leaves would get one name, or a metadata key or value is not valid
// UTF-8 (the header is UTF-8 JSON), and the file system's error when
// writing fails (the temporary file is then removed).
func Save(path string, t any, meta ...map[string]string) error {
	const op = "checkpoint.Save"
	var leaves []*peel.Tensor
	var paths []string
	if err := peel.Catch(func() { leaves, paths = tree.Leaves(t), tree.Paths(t) }); err != nil {
		return err
	}
	md := map[string]string{"format": "peel", "format_version": FormatVersion, "peel_version": peel.Version()}
	for _, m := range meta {
		for k, v := range m {
			if _, taken := md[k]; taken {
				return errorf(op, "metadata key %q is Save's own", k)
			}
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return errorf(op, "metadata %q: %q is not valid UTF-8, which the format's JSON header cannot hold", k, v)
			}
			md[k] = v
		}
	}
	header := map[string]any{"__metadata__": md}
	type part struct {
		t    *peel.Tensor
		size int64
	}
	parts := make([]part, len(leaves))
	var off int64
	for i, l := range leaves {
		name := Name(paths[i])
		if !l.IsConcrete() {
			return errorf(op, "leaf %s is traced (%s): Save needs concrete tensors", paths[i], l.TypeString())
		}
		if _, dup := header[name]; dup {
			return errorf(op, "two leaves would be saved as %q", name)
		}
		dt := l.DType()
		size := int64(l.Size()) * int64(dt.Size())
		if !utf8.ValidString(name) {
			return errorf(op, "leaf %s: its name is not valid UTF-8, which the format's JSON header cannot hold", paths[i])
		}
		header[name] = entry{DType: dtypeNames[dt], Shape: slices.Clone(l.Shape()), DataOffsets: []int64{off, off + size}}
		parts[i] = part{l, size}
		off += size
	}
	head, err := json.Marshal(header)
	if err != nil {
		return errorf(op, "encoding the header: %v", err)
	}
	// The data start at a multiple of 8 bytes: pad the header with spaces
	// (allowed by the format).
	for (8+len(head))%8 != 0 {
		head = append(head, ' ')
	}
	f, err := createTemp(path)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("%s: writing %s: %w", op, path, err)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(head)))
	if _, err := f.Write(n[:]); err != nil {
		return fail(err)
	}
	if _, err := f.Write(head); err != nil {
		return fail(err)
	}
	for _, p := range parts {
		if _, err := f.Write(leBytes(p.t)); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := closeAndRename(f, tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", op, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil { // the rename itself durable
		d.Sync()
		d.Close()
	}
	return nil
}

// leBytes returns t's elements as little-endian bytes, row-major (a
// bool as 0 or 1).
func leBytes(t *peel.Tensor) []byte {
	arr, be := interp.ArrayOf(t)
	return toLE(be.ToHost(arr))
}

// toLE returns the bytes of a host slice in little-endian order.
func toLE(s any) []byte {
	b := rawBytes(s)
	if nativeLE {
		return b
	}
	out := slices.Clone(b)
	swap(out, elemSize(s))
	return out
}

var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// rawBytes returns the memory of a host slice as bytes (no copy).
func rawBytes(s any) []byte { return backend.HostBytes(s) }

func elemSize(s any) int {
	switch s.(type) {
	case []float64, []int64:
		return 8
	case []float32, []int32:
		return 4
	case []backend.F16, []backend.BF16:
		return 2
	}
	return 1
}

// swap reverses the bytes of each k-byte element of b.
func swap(b []byte, k int) {
	for i := 0; i+k <= len(b); i += k {
		slices.Reverse(b[i : i+k])
	}
}

// File is an open safetensors file: its header, checked, and the file
// to read tensors from.
type File struct {
	f        io.ReaderAt
	closer   io.Closer
	path     string
	dataOff  int64
	entries  map[string]entry
	Metadata map[string]string
}

// Open opens a safetensors file and checks its header: a length within
// the file (and at most 100 MB), valid UTF-8 JSON naming each tensor's
// dtype, shape and byte range (a [begin, end] pair), ranges that lie in
// the data, match their dtype and shape, and cover the data without
// overlap. It returns a *peel.Error
// naming what is wrong, or the file system's error.
func Open(path string) (*File, error) {
	const op = "checkpoint.Open"
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	c, perr := parseHeader(f, st.Size())
	if perr != nil {
		f.Close()
		perr.Msg = path + ": " + perr.Msg
		return nil, perr
	}
	c.path, c.closer = path, f
	return c, nil
}

// parseHeader reads and checks the header of a file of size bytes.
func parseHeader(r io.ReaderAt, size int64) (*File, *peel.Error) {
	const op = "checkpoint.Open"
	var n [8]byte
	if _, err := r.ReadAt(n[:], 0); err != nil {
		return nil, errorf(op, "not a safetensors file: %d bytes, shorter than the header length", size)
	}
	hl := binary.LittleEndian.Uint64(n[:])
	if hl > maxHeader || int64(hl) > size-8 {
		return nil, errorf(op, "the header length %d exceeds the file's %d bytes (or 100 MB): truncated or not safetensors", hl, size)
	}
	head := make([]byte, hl)
	if _, err := r.ReadAt(head, 8); err != nil {
		return nil, errorf(op, "reading the header: %v", err)
	}
	// The header is UTF-8 JSON; Go's decoder would replace invalid bytes
	// with U+FFFD, changing names (two could become one) and metadata.
	if !utf8.Valid(head) {
		return nil, errorf(op, "the header is not valid UTF-8 (at byte %d of the header): a tensor name or a metadata value would be changed", invalidUTF8At(head))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(head, &raw); err != nil {
		return nil, errorf(op, "the header is not a JSON object: %v", err)
	}
	c := &File{f: r, dataOff: 8 + int64(hl), entries: map[string]entry{}}
	dataLen := size - c.dataOff
	type span struct {
		name       string
		start, end int64
	}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &c.Metadata); err != nil {
				return nil, errorf(op, "__metadata__ is not an object of strings: %v", err)
			}
			continue
		}
		var e entry
		dec := json.NewDecoder(strings.NewReader(string(msg)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, errorf(op, "tensor %q: %v", name, err)
		}
		_, esize, ok := fileDType(e.DType)
		if !ok {
			return nil, errorf(op, "tensor %q: dtype %q is not one of the format's (F64, F32, F16, BF16, F8_E5M2, F8_E4M3, I64, I32, I16, I8, U64, U32, U16, U8, BOOL)", name, e.DType)
		}
		if e.Shape == nil {
			e.Shape = []int{}
		}
		count := int64(1)
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && count > math.MaxInt64/int64(d)/8) {
				return nil, errorf(op, "tensor %q: shape %v is negative or too large", name, e.Shape)
			}
			count *= int64(d)
		}
		if len(e.DataOffsets) != 2 {
			return nil, errorf(op, "tensor %q: data_offsets has %d entries, not the [begin, end] pair of the format", name, len(e.DataOffsets))
		}
		s, t := e.DataOffsets[0], e.DataOffsets[1]
		if s < 0 || t < s || t > dataLen {
			return nil, errorf(op, "tensor %q: bytes [%d, %d) lie outside the %d bytes of data (truncated?)", name, s, t, dataLen)
		}
		if t-s != count*int64(esize) {
			return nil, errorf(op, "tensor %q: %s%v needs %d bytes but has [%d, %d)", name, e.DType, e.Shape, count*int64(esize), s, t)
		}
		c.entries[name] = e
		spans = append(spans, span{name, s, t})
	}
	sort.Slice(spans, func(i, j int) bool {
		return spans[i].start < spans[j].start || spans[i].start == spans[j].start && spans[i].end < spans[j].end
	})
	var at int64
	for _, sp := range spans {
		if sp.start != at && !(sp.start == sp.end && sp.start <= at) {
			if sp.start < at {
				return nil, errorf(op, "tensor %q's bytes [%d, %d) overlap another tensor's", sp.name, sp.start, sp.end)
			}
			return nil, errorf(op, "bytes [%d, %d) of the data belong to no tensor", at, sp.start)
		}
		at = max(at, sp.end)
	}
	if at != dataLen {
		return nil, errorf(op, "the data has %d bytes but the tensors cover %d", dataLen, at)
	}
	return c, nil
}

// NewReader reads a safetensors file of size bytes from r (a file in
// memory, a section of a larger file), checking its header as Open
// does.
func NewReader(r io.ReaderAt, size int64) (*File, error) {
	c, err := parseHeader(r, size)
	if err != nil {
		return nil, err
	}
	c.path = "safetensors data"
	return c, nil
}

// Close closes the file (nothing, for NewReader's).
func (c *File) Close() error {
	if c.closer == nil {
		return nil
	}
	return c.closer.Close()
}

// Names returns the tensors' names, sorted.
func (c *File) Names() []string {
	names := make([]string, 0, len(c.entries))
	for n := range c.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Tensor reads the named tensor from the file into a new tensor (its
// bytes read once, straight into the tensor's memory). The format's
// dtypes peel has no type for, which other frameworks write, are read
// into the peel dtype that holds each value exactly: I8, I16 and U16
// into i32, U32 and U64 into i64, F8_E5M2 and F8_E4M3 into f32 (and
// Load compares those dtypes with like's). It returns a *peel.Error
// when the file has no such tensor, BOOL bytes other than 0 and 1, or a
// U64 beyond int64 (naming the element), and the file system's error
// when reading fails.
func (c *File) Tensor(name string) (*peel.Tensor, error) {
	const op = "checkpoint.File.Tensor"
	e, ok := c.entries[name]
	if !ok {
		return nil, errorf(op, "%s has no tensor %q", c.path, name)
	}
	dt, esize, _ := fileDType(e.DType)
	n := 1
	for _, d := range e.Shape {
		n *= d
	}
	if err := backend.CheckAlloc(dt, n); err != nil {
		return nil, errorf(op, "tensor %q: %v", name, err)
	}
	host := backend.HostSlice(dt, n)
	if f, ok := foreign[e.DType]; ok {
		// Another framework's dtype: its bytes, converted.
		b := make([]byte, n*esize)
		if _, err := c.f.ReadAt(b, c.dataOff+e.DataOffsets[0]); err != nil {
			return nil, fmt.Errorf("%s: %s: tensor %q: %w", op, c.path, name, err)
		}
		if err := f.decode(b, host); err != nil {
			return nil, errorf(op, "tensor %q (%s, read as %v): %v", name, e.DType, dt, err)
		}
		be := interp.DefaultBackend()
		return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, host), Shape: slices.Clone(e.Shape)}), nil
	}
	b := rawBytes(host)
	if _, err := c.f.ReadAt(b, c.dataOff+e.DataOffsets[0]); err != nil {
		return nil, fmt.Errorf("%s: %s: tensor %q: %w", op, c.path, name, err)
	}
	if !nativeLE {
		swap(b, elemSize(host))
	}
	if dt == peel.Bool {
		for i, v := range b {
			if v > 1 {
				return nil, errorf(op, "tensor %q: byte %d of a BOOL tensor is %d, not 0 or 1", name, i, v)
			}
		}
	}
	be := interp.DefaultBackend()
	return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, host), Shape: slices.Clone(e.Shape)}), nil
}

// Read returns every tensor of a safetensors file by name, and its
// metadata, whatever wrote it (a torch state_dict saved with
// safetensors). It returns the errors Open and File.Tensor return.
func Read(path string) (map[string]*peel.Tensor, map[string]string, error) {
	c, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	out := map[string]*peel.Tensor{}
	for _, name := range c.Names() {
		t, err := c.Tensor(name)
		if err != nil {
			return nil, nil, err
		}
		out[name] = t
	}
	return out, c.Metadata, nil
}

// Load reads the checkpoint at path into a tree of like's structure:
// each leaf is the tensor named after its path (Name), checked against
// like's leaf first. Every difference — a leaf the file lacks, a tensor
// no leaf names, another shape or dtype — is reported by path in one
// *peel.Error before any tensor is read. The file system's errors are
// returned as they are.
func Load[T any](path string, like T) (T, error) {
	const op = "checkpoint.Load"
	var zero T
	var leaves []*peel.Tensor
	var paths []string
	if err := peel.Catch(func() { leaves, paths = tree.Leaves(like), tree.Paths(like) }); err != nil {
		return zero, err
	}
	c, err := Open(path)
	if err != nil {
		return zero, err
	}
	defer c.Close()
	var probs []string
	seen := map[string]bool{}
	for i, l := range leaves {
		name := Name(paths[i])
		seen[name] = true
		e, ok := c.entries[name]
		if !ok {
			probs = append(probs, fmt.Sprintf("%s: missing from the file (want %s)", pathOr(paths[i]), l.TypeString()))
			continue
		}
		dt, _, _ := fileDType(e.DType)
		if dt != l.DType() || !slices.Equal(e.Shape, l.Shape()) {
			probs = append(probs, fmt.Sprintf("%s: the file has %s%v, want %s", pathOr(paths[i]), dt, e.Shape, l.TypeString()))
		}
	}
	unnamed := false
	for _, name := range c.Names() {
		if !seen[name] {
			probs = append(probs, fmt.Sprintf("%q: in the file but no leaf of the tree is named so", name))
			unnamed = true
		}
	}
	n := len(probs)
	if unnamed {
		// Often a zero-valued tree (MLP{}): say what like is for.
		probs = append(probs, "(a nil tensor in like is an empty subtree, not a leaf: Load reads each leaf into a tensor of like's shape and dtype, so give it a tree of tensors, such as the model's initial parameters)")
	}
	if len(probs) > 0 {
		return zero, errorf(op, "%s does not match the tree (%d differences):\n  %s", path, n, strings.Join(probs, "\n  "))
	}
	out := make([]*peel.Tensor, len(leaves))
	for i := range leaves {
		if out[i], err = c.Tensor(Name(paths[i])); err != nil {
			return zero, err
		}
	}
	var res T
	if err := peel.Catch(func() { res = tree.Unflatten(like, out) }); err != nil {
		return zero, err
	}
	return res, nil
}

func pathOr(p string) string {
	if p == "" {
		return "(the root)"
	}
	return p
}

// invalidUTF8At returns the offset of b's first byte that is not part of
// a valid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// createTemp creates a new file beside path for Save to write and rename,
// named .<base>.tmp<random>, with mode 0666 less the process's umask, as
// torch, numpy and os.Create make files (os.CreateTemp's 0600 would keep
// a checkpoint from a serving process of another user).
//
// It first removes the stale temporaries of path: files named so (a dot,
// path's base name, ".tmp" and digits) that no Save holds locked, left by
// a process killed while it saved. Each Save holds an advisory lock
// (flock) on its temporary while it writes, so a Save running in another
// process keeps its own; where flock is not available nothing is
// removed.
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Dir(path), "."+filepath.Base(path)+".tmp"
	removeStale(dir, base)
	for range 10000 {
		name := filepath.Join(dir, base+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if os.IsExist(err) {
			continue
		}
		if err == nil {
			lockTemp(f)
		}
		return f, err
	}
	return nil, fmt.Errorf("no free temporary name beside %s", path)
}

// removeStale removes the files of dir named prefix and digits that no
// process holds locked.
func removeStale(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		if name := filepath.Join(dir, e.Name()); unlocked(name) {
			os.Remove(name)
		}
	}
}
