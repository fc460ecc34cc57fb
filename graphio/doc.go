// Package graphio is the encoding of exported programs
// (transforms.Export): a graph written as bytes and read back, with
// every primitive's parameters written by its codec. The layout is
// documented in docs/export-format.md; the file around the graph
// (magic, version, argument paths) is package transforms'.
//
// Encode writes a graph, Decode and DecodeWith read one back. The
// loader trusts nothing: every count is bounded by the bytes left,
// every value's size by the allocation limit, nesting by 32 graphs, and
// every equation is type-checked (its primitive's Abstract on its
// operands must give the recorded results). Decode never panics.
//
// A primitive with parameters declares their type where it is defined,
// which gives it its codec (interp.Prim.Codec, a *Codec): Params for a
// plain parameter struct (StructCodec, field by field), or ParamsWith
// for a codec of its own (a function that writes into a Writer and one
// that reads from a Reader), for parameters that hold graphs or another
// primitive's parameters. A primitive with parameters and no codec
// cannot be exported, and Encode says which.
package graphio
