package bench

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// The reader of the CPU profiles runtime/pprof writes: gzip-compressed
// protocol buffers of the published profile.proto schema. Only what a
// breakdown needs is kept: each sample's stack (functions leaf first,
// inlined calls expanded, each with its source file) and its CPU time.

// profFrame is one function of a sample's stack.
type profFrame struct {
	Name, File string
}

// profSample is one sample: its stack, leaf first, and the CPU time it
// stands for.
type profSample struct {
	Stack []profFrame
	Nanos int64
}

// readCPUProfile decodes a CPU profile written by runtime/pprof.
func readCPUProfile(r io.Reader) ([]profSample, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return decodeProfile(data)
}

// Field numbers of profile.proto.
const (
	pfSampleType = 1 // Profile.sample_type: ValueType
	pfSample     = 2 // Profile.sample: Sample
	pfLocation   = 4 // Profile.location: Location
	pfFunction   = 5 // Profile.function: Function
	pfStrings    = 6 // Profile.string_table: string

	psLocation = 1 // Sample.location_id: packed or repeated uint64
	psValue    = 2 // Sample.value: packed or repeated int64

	plID   = 1 // Location.id
	plLine = 4 // Location.line: Line

	plnFunction = 1 // Line.function_id

	pfnID   = 1 // Function.id
	pfnName = 2 // Function.name: string table index
	pfnFile = 4 // Function.filename: string table index

	pvType = 1 // ValueType.type: string table index
)

// decodeProfile decodes an uncompressed profile.
func decodeProfile(data []byte) ([]profSample, error) {
	type rawSample struct{ locs, values []uint64 }
	var (
		types    []uint64 // string indices of the sample types
		samples  []rawSample
		strs     []string
		funcName = map[uint64][2]uint64{} // id → name, file indices
		locFuncs = map[uint64][]uint64{}  // location id → function ids, innermost first
	)
	err := eachField(data, func(num int, wire int, v uint64, b []byte) error {
		switch num {
		case pfSampleType:
			var t uint64
			if err := eachField(b, func(n, _ int, v uint64, _ []byte) error {
				if n == pvType {
					t = v
				}
				return nil
			}); err != nil {
				return err
			}
			types = append(types, t)
		case pfSample:
			var s rawSample
			if err := eachField(b, func(n, w int, v uint64, b []byte) error {
				switch n {
				case psLocation:
					return appendUints(&s.locs, w, v, b)
				case psValue:
					return appendUints(&s.values, w, v, b)
				}
				return nil
			}); err != nil {
				return err
			}
			samples = append(samples, s)
		case pfLocation:
			var id uint64
			var fns []uint64
			if err := eachField(b, func(n, _ int, v uint64, b []byte) error {
				switch n {
				case plID:
					id = v
				case plLine:
					return eachField(b, func(n, _ int, v uint64, _ []byte) error {
						if n == plnFunction {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			}); err != nil {
				return err
			}
			locFuncs[id] = fns
		case pfFunction:
			var id uint64
			var nf [2]uint64
			if err := eachField(b, func(n, _ int, v uint64, _ []byte) error {
				switch n {
				case pfnID:
					id = v
				case pfnName:
					nf[0] = v
				case pfnFile:
					nf[1] = v
				}
				return nil
			}); err != nil {
				return err
			}
			funcName[id] = nf
		case pfStrings:
			if wire != wireBytes {
				return errors.New("profile: string table entry is not a string")
			}
			strs = append(strs, string(b))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	str := func(i uint64) string {
		if i < uint64(len(strs)) {
			return strs[i]
		}
		return ""
	}
	// The CPU time is the value whose type is "cpu" (runtime/pprof
	// writes samples/count and cpu/nanoseconds).
	vi := -1
	for i, t := range types {
		if str(t) == "cpu" {
			vi = i
		}
	}
	if vi < 0 {
		return nil, errors.New("profile: no cpu sample type (not a CPU profile)")
	}
	out := make([]profSample, 0, len(samples))
	for _, s := range samples {
		if vi >= len(s.values) {
			return nil, errors.New("profile: a sample without its cpu value")
		}
		var st []profFrame
		for _, l := range s.locs {
			for _, f := range locFuncs[l] {
				nf := funcName[f]
				st = append(st, profFrame{Name: str(nf[0]), File: str(nf[1])})
			}
		}
		out = append(out, profSample{Stack: st, Nanos: int64(s.values[vi])})
	}
	return out, nil
}

// Wire types of the protocol buffer encoding.
const (
	wireVarint = 0
	wire64     = 1
	wireBytes  = 2
	wire32     = 5
)

// eachField calls f with every field of the message in data: its number,
// wire type, and its value (varints) or bytes (length-delimited).
func eachField(data []byte, f func(num, wire int, v uint64, b []byte) error) error {
	for len(data) > 0 {
		key, n := uvarint(data)
		if n <= 0 {
			return errors.New("profile: bad field key")
		}
		data = data[n:]
		num, wire := int(key>>3), int(key&7)
		var v uint64
		var b []byte
		switch wire {
		case wireVarint:
			v, n = uvarint(data)
			if n <= 0 {
				return errors.New("profile: bad varint")
			}
			data = data[n:]
		case wire64:
			if len(data) < 8 {
				return errors.New("profile: short fixed64")
			}
			data = data[8:]
		case wire32:
			if len(data) < 4 {
				return errors.New("profile: short fixed32")
			}
			data = data[4:]
		case wireBytes:
			l, n := uvarint(data)
			if n <= 0 || l > uint64(len(data)-n) {
				return errors.New("profile: bad length")
			}
			b = data[n : n+int(l)]
			data = data[n+int(l):]
		default:
			return fmt.Errorf("profile: wire type %d", wire)
		}
		if err := f(num, wire, v, b); err != nil {
			return err
		}
	}
	return nil
}

// appendUints appends a repeated integer field's values: one varint, or
// a packed run of them.
func appendUints(dst *[]uint64, wire int, v uint64, b []byte) error {
	switch wire {
	case wireVarint:
		*dst = append(*dst, v)
	case wireBytes:
		for len(b) > 0 {
			x, n := uvarint(b)
			if n <= 0 {
				return errors.New("profile: bad packed varint")
			}
			*dst = append(*dst, x)
			b = b[n:]
		}
	default:
		return fmt.Errorf("profile: integer field of wire type %d", wire)
	}
	return nil
}

// uvarint decodes a varint, returning its length (0 or less when bad).
func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}
