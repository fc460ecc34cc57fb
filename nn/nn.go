package nn

import (
	"fmt"

	"github.com/peel-ml/peel"
)

// fail panics with a *peel.Error naming op.
func fail(op, format string, args ...any) {
	panic(&peel.Error{Ops: []string{op}, Msg: fmt.Sprintf(format, args...)})
}

// need panics with a *peel.Error naming op when x is nil.
func need(op, what string, x *peel.Tensor) {
	if x == nil {
		fail(op, "%s is a nil tensor", what)
	}
}

// needFloat panics with a *peel.Error naming op when x is nil or not a
// float tensor.
func needFloat(op, what string, x *peel.Tensor) {
	need(op, what, x)
	if d := x.DType(); d != peel.Float32 && d != peel.Float64 {
		fail(op, "%s has dtype %v, not a float dtype", what, d)
	}
}
