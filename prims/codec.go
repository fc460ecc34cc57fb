package prims

import (
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// The parameter encoding of every primitive with parameters, for
// exported programs (graphio, transforms.Export): a table, so
// that a primitive and the struct it takes are paired in one place and a
// test can check the table against the primitive set. Each struct is
// encoded field by field (graphio.StructCodec); a new field changes the
// encoding, so it goes with a new format version in package transforms.
func init() {
	set := func(c *graphio.Codec, ps ...*interp.Prim) {
		for _, p := range ps {
			p.Codec = c
		}
	}
	set(graphio.StructCodec[ReduceParams](), ReduceSum, ReduceMax, ReduceMin, ReduceProd)
	set(graphio.StructCodec[AxisParams](), ArgMax, ArgMin, Gather, ScatterAdd, Scatter, ScatterMul, ScatterMax, ScatterMin, Concatenate, Softmax, LogSoftmax)
	set(graphio.StructCodec[NormParams](), LayerNorm, RMSNorm)
	set(graphio.StructCodec[CumsumParams](), Cumsum, Cumprod, Cumlogsumexp, Cummax, Cummin)
	set(graphio.StructCodec[DynamicSliceParams](), DynamicSlice)
	set(graphio.StructCodec[TriangularSolveParams](), TriangularSolve)
	set(graphio.StructCodec[SVDParams](), SVD)
	set(graphio.StructCodec[PinvParams](), Pinv)
	set(graphio.StructCodec[BroadcastParams](), BroadcastInDim)
	set(graphio.StructCodec[ReshapeParams](), Reshape)
	set(graphio.StructCodec[TransposeParams](), Transpose)
	set(graphio.StructCodec[SliceParams](), Slice)
	set(graphio.StructCodec[PadParams](), Pad)
	set(graphio.StructCodec[RevParams](), Rev)
	set(graphio.StructCodec[IotaParams](), Iota)
	set(graphio.StructCodec[SortParams](), Sort)
	set(graphio.StructCodec[SearchParams](), SearchSorted)
	set(graphio.StructCodec[PolygammaParams](), Polygamma)
	set(graphio.StructCodec[ConvParams](), ConvGeneralDilated)
	set(graphio.StructCodec[WindowParams](), ReduceWindowSum, ReduceWindowMax)
	set(graphio.StructCodec[ConvertParams](), ConvertElementType)
	set(graphio.StructCodec[DotParams](), DotGeneral)
	set(graphio.StructCodec[CollectiveParams](), Psum, Pmax, Pmin)
	set(graphio.StructCodec[GatherParams](), AllGather, PsumScatter)
	set(graphio.StructCodec[AllToAllParams](), AllToAll)
	set(graphio.StructCodec[PermuteParams](), Ppermute)
}
