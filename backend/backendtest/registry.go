package backendtest

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// registry returns the conformance case of every primitive the suite
// knows. An in-place primitive whose out-of-place form is an elementwise
// binary primitive with a case is covered by that case's reference.
func registry() map[*interp.Prim]func(*suite) {
	m := map[*interp.Prim]func(*suite){}
	for _, u := range unaryOps {
		m[u.prim] = u.run
	}
	for _, p := range prims.References() {
		if _, ok := m[p]; !ok {
			m[p] = referenceOp(p).run
		}
	}
	pure := map[*interp.Prim]binaryOp{}
	for _, o := range binaryOps {
		m[o.prim] = o.run
		pure[o.prim] = o
	}
	for _, p := range interp.Prims() {
		if o, ok := pure[p.Pure]; ok && p.Kind == interp.Mutation && !p.DropsDst {
			m[p] = func(s *suite) { o.runMutation(s, p) }
		}
	}
	addSpecial(m)
	m[prims.CopyInPlace] = runCopyInPlace
	m[prims.Where] = runSelect
	m[prims.ConvertElementType] = func(s *suite) { runConvert(s); runConvertStorage(s); runStorageKernels(s) }
	m[prims.Threefry2x32] = runThreefry

	m[prims.ReduceSum] = runReduce(prims.ReduceSum, sumReduce, sumValues)
	m[prims.ReduceProd] = runReduce(prims.ReduceProd, prodReduce, prodValues)
	m[prims.ReduceMax] = runReduce(prims.ReduceMax, maxReduce, defaultValues)
	m[prims.ReduceMin] = runReduce(prims.ReduceMin, minReduce, defaultValues)
	m[prims.ArgMax] = runArg(prims.ArgMax, true)
	m[prims.ArgMin] = runArg(prims.ArgMin, false)
	m[prims.Cumsum] = runCumsum
	m[prims.Sort] = runSort
	m[prims.SearchSorted] = runSearchSorted
	addScans(m)
	addSoftmax(m)
	addNorms(m)

	m[prims.Transpose] = runView(prims.Transpose, transposeParams, badTranspose)
	m[prims.Slice] = runView(prims.Slice, sliceParams, badSlice)
	m[prims.Reshape] = runView(prims.Reshape, reshapeParams, badReshape)
	m[prims.OptimizationBarrier] = runView(prims.OptimizationBarrier, func([]int) []any { return []any{nil} }, func(*suite) {})
	m[prims.BroadcastInDim] = runView(prims.BroadcastInDim, broadcastParams, badBroadcast)

	m[prims.Pad] = runPad
	m[prims.Concatenate] = runConcatenate
	m[prims.Rev] = runRev
	m[prims.Iota] = runIota
	m[prims.Gather] = runGather
	m[prims.Scatter] = runScatter(prims.Scatter, false)
	m[prims.ScatterAdd] = runScatter(prims.ScatterAdd, true)
	m[prims.ScatterMul] = runScatterCombine(prims.ScatterMul, combineMul)
	m[prims.ScatterMax] = runScatterCombine(prims.ScatterMax, combineMax)
	m[prims.ScatterMin] = runScatterCombine(prims.ScatterMin, combineMin)
	m[prims.DynamicSlice] = runDynamicSlice
	m[prims.DynamicUpdateSlice] = runDynamicUpdateSlice
	m[prims.DotGeneral] = runDot
	m[prims.ConvGeneralDilated] = runConv
	m[prims.ReduceWindowSum] = runReduceWindow(prims.ReduceWindowSum, false, sumValues)
	m[prims.ReduceWindowMax] = runReduceWindow(prims.ReduceWindowMax, true, defaultValues)
	m[prims.Cholesky], m[prims.TriangularSolve], m[prims.LU] = runCholesky, runTriangularSolve, runLU
	m[prims.QR], m[prims.Eigh], m[prims.SVD] = runQR, runEigh, runSVD
	return m
}
