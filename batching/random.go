package batching

import "github.com/peel-ml/peel/prims"

// threefry2x32 is elementwise in its four operands.
func init() {
	register(prims.Threefry2x32, ElementwiseRule(prims.Threefry2x32))
}
