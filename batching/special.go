package batching

import "github.com/peel-ml/peel/prims"

// polygamma carries its order as a parameter, so it has no Elementwise
// rule; it is elementwise all the same.
func init() {
	register(prims.Polygamma, ElementwiseRule(prims.Polygamma))
}
