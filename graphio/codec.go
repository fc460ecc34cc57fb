package graphio

import (
	"reflect"

	"github.com/peel-ml/peel/interp"
)

// Codec writes a primitive's parameters into an exported program and
// reads them back; a primitive carries it as its interp.Prim.Codec, set
// where the primitive is defined (Params, ParamsWith). The encoder
// appends the parameters to a Writer; the decoder reads what the encoder
// wrote and returns an equal value. The decoder must not panic on any
// input: it reads through a Reader, whose methods record the first
// malformed value and return zeros after it, and the loader refuses the
// equation then (and type-checks every equation it accepts with
// Abstract).
type Codec struct {
	typ    reflect.Type
	encode func(w *Writer, params any)
	decode func(r *Reader) any
}

// ParamType returns the type of the parameters c writes
// (interp.ParamCodec).
func (c *Codec) ParamType() reflect.Type { return c.typ }

// Params sets p's codec to StructCodec[T] and returns p, so that a
// primitive whose parameters are a plain struct declares it where it is
// defined, around the primitive interp.NewPrim makes (prims.Slice is
// Params[prims.SliceParams] of it), and can be exported. It panics as
// StructCodec does.
func Params[T any](p *interp.Prim) *interp.Prim {
	p.Codec = StructCodec[T]()
	return p
}

// ParamsWith sets p's codec to one of its own, for parameters of type T
// that are not a plain struct (they hold graphs, or another primitive
// and its parameters), and returns p. encode appends the parameters to
// w; decode reads what encode wrote and returns an equal value (its
// result is ignored once r has failed).
func ParamsWith[T any](p *interp.Prim, encode func(w *Writer, params T), decode func(r *Reader) T) *interp.Prim {
	p.Codec = &Codec{
		typ:    reflect.TypeFor[T](),
		encode: func(w *Writer, params any) { encode(w, params.(T)) },
		decode: func(r *Reader) any { return decode(r) },
	}
	return p
}

// codecOf returns p's codec, or nil when it has none this package
// knows.
func codecOf(p *interp.Prim) *Codec {
	c, _ := p.Codec.(*Codec)
	return c
}

// StructCodec returns the codec of a parameter struct T (a value, not a
// pointer) of exported fields, each an int, bool, float64, string or
// dtype, a slice or array of them, or such a struct. It panics if T has
// another field: the codec is made in package initialization, beside the
// primitive.
func StructCodec[T any]() *Codec {
	t := reflect.TypeFor[T]()
	checkCodecType(t, t.String())
	return &Codec{
		typ:    t,
		encode: func(w *Writer, params any) { encodeValue(w, reflect.ValueOf(params)) },
		decode: func(r *Reader) any {
			v := reflect.New(t).Elem()
			decodeValue(r, v)
			return v.Interface()
		},
	}
}

var dtypeType = reflect.TypeFor[interp.DType]()

func checkCodecType(t reflect.Type, where string) {
	if t == dtypeType {
		return
	}
	switch t.Kind() {
	case reflect.Int, reflect.Bool, reflect.Float64, reflect.String:
	case reflect.Slice, reflect.Array:
		checkCodecType(t.Elem(), where+"[]")
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				panic("graphio.StructCodec: " + where + "." + f.Name + " is unexported")
			}
			checkCodecType(f.Type, where+"."+f.Name)
		}
	default:
		panic("graphio.StructCodec: " + where + " is a " + t.String() + ", which has no encoding")
	}
}

func encodeValue(w *Writer, v reflect.Value) {
	if v.Type() == dtypeType {
		w.DType(interp.DType(v.Uint()))
		return
	}
	switch v.Kind() {
	case reflect.Int:
		w.Int(int(v.Int()))
	case reflect.Bool:
		w.Bool(v.Bool())
	case reflect.Float64:
		w.Float64(v.Float())
	case reflect.String:
		w.Text(v.String())
	case reflect.Slice:
		// nil and empty differ (an absent option and an empty list).
		if v.IsNil() {
			w.Uint(0)
			return
		}
		w.Uint(uint64(v.Len()) + 1)
		for i := range v.Len() {
			encodeValue(w, v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			encodeValue(w, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			encodeValue(w, v.Field(i))
		}
	}
}

func decodeValue(r *Reader, v reflect.Value) {
	if r.err != nil {
		return
	}
	if v.Type() == dtypeType {
		v.SetUint(uint64(r.DType()))
		return
	}
	switch v.Kind() {
	case reflect.Int:
		v.SetInt(int64(r.Int()))
	case reflect.Bool:
		v.SetBool(r.Bool())
	case reflect.Float64:
		v.SetFloat(r.Float64())
	case reflect.String:
		v.SetString(r.Text())
	case reflect.Slice:
		n := r.Uint()
		if r.err != nil || n == 0 {
			return
		}
		if n-1 > uint64(len(r.data)-r.off) {
			r.Failf("a count of %d with %d bytes left", n-1, len(r.data)-r.off)
			return
		}
		s := reflect.MakeSlice(v.Type(), int(n-1), int(n-1))
		for i := range s.Len() {
			decodeValue(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			decodeValue(r, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			decodeValue(r, v.Field(i))
		}
	}
}
