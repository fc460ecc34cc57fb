package prims

import "github.com/peel-ml/peel/interp"

// The parameter encoding of every primitive with parameters, for
// exported programs (interp.ParamCodec, transforms.Export): a table, so
// that a primitive and the struct it takes are paired in one place and a
// test can check the table against the primitive set. Each struct is
// encoded field by field (interp.StructCodec); a new field changes the
// encoding, so it goes with a new format version in package transforms.
func init() {
	set := func(c *interp.ParamCodec, ps ...*interp.Prim) {
		for _, p := range ps {
			p.Codec = c
		}
	}
	set(interp.StructCodec[ReduceParams](), ReduceSum, ReduceMax, ReduceMin, ReduceProd)
	set(interp.StructCodec[AxisParams](), ArgMax, ArgMin, Gather, ScatterAdd, Scatter, ScatterMul, ScatterMax, ScatterMin, Concatenate, Softmax, LogSoftmax)
	set(interp.StructCodec[NormParams](), LayerNorm, RMSNorm)
	set(interp.StructCodec[CumsumParams](), Cumsum, Cumprod, Cumlogsumexp, Cummax, Cummin)
	set(interp.StructCodec[DynamicSliceParams](), DynamicSlice)
	set(interp.StructCodec[TriangularSolveParams](), TriangularSolve)
	set(interp.StructCodec[SVDParams](), SVD)
	set(interp.StructCodec[PinvParams](), Pinv)
	set(interp.StructCodec[BroadcastParams](), BroadcastInDim)
	set(interp.StructCodec[ReshapeParams](), Reshape)
	set(interp.StructCodec[TransposeParams](), Transpose)
	set(interp.StructCodec[SliceParams](), Slice)
	set(interp.StructCodec[PadParams](), Pad)
	set(interp.StructCodec[RevParams](), Rev)
	set(interp.StructCodec[IotaParams](), Iota)
	set(interp.StructCodec[SortParams](), Sort)
	set(interp.StructCodec[SearchParams](), SearchSorted)
	set(interp.StructCodec[PolygammaParams](), Polygamma)
	set(interp.StructCodec[ConvParams](), ConvGeneralDilated)
	set(interp.StructCodec[WindowParams](), ReduceWindowSum, ReduceWindowMax)
	set(interp.StructCodec[ConvertParams](), ConvertElementType)
	set(interp.StructCodec[DotParams](), DotGeneral)
	set(interp.StructCodec[CollectiveParams](), Psum, Pmax, Pmin)
	set(interp.StructCodec[GatherParams](), AllGather, PsumScatter)
	set(interp.StructCodec[AllToAllParams](), AllToAll)
	set(interp.StructCodec[PermuteParams](), Ppermute)
}
