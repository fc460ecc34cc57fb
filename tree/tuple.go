package tree

// Tuples are trees of two, three or four values of their own types, the
// several results of a transformed or compiled function (JAX returns a
// Python tuple): a compiled training step returns
// tree.Pack3(params, state, loss), a Tuple3, and its caller unpacks it
// in one line, params, state, loss = step(params, state, batch).Unpack().
// Their leaf paths read [0], [1], …, as a slice's do.

// Tuple2 is a tree of two values; Pack2 makes one.
type Tuple2[A, B any] struct {
	V0 A `peeltree:"[0]"`
	V1 B `peeltree:"[1]"`
}

// Tuple3 is a tree of three values; Pack3 makes one.
type Tuple3[A, B, C any] struct {
	V0 A `peeltree:"[0]"`
	V1 B `peeltree:"[1]"`
	V2 C `peeltree:"[2]"`
}

// Tuple4 is a tree of four values; Pack4 makes one.
type Tuple4[A, B, C, D any] struct {
	V0 A `peeltree:"[0]"`
	V1 B `peeltree:"[1]"`
	V2 C `peeltree:"[2]"`
	V3 D `peeltree:"[3]"`
}

// Pack2 returns the tuple (a, b).
func Pack2[A, B any](a A, b B) Tuple2[A, B] { return Tuple2[A, B]{a, b} }

// Pack3 returns the tuple (a, b, c).
func Pack3[A, B, C any](a A, b B, c C) Tuple3[A, B, C] { return Tuple3[A, B, C]{a, b, c} }

// Pack4 returns the tuple (a, b, c, d).
func Pack4[A, B, C, D any](a A, b B, c C, d D) Tuple4[A, B, C, D] {
	return Tuple4[A, B, C, D]{a, b, c, d}
}

// Unpack returns the tuple's values.
func (t Tuple2[A, B]) Unpack() (A, B) { return t.V0, t.V1 }

// Unpack returns the tuple's values.
func (t Tuple3[A, B, C]) Unpack() (A, B, C) { return t.V0, t.V1, t.V2 }

// Unpack returns the tuple's values.
func (t Tuple4[A, B, C, D]) Unpack() (A, B, C, D) { return t.V0, t.V1, t.V2, t.V3 }
