package nn

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

func transformsGrad(f func(*peel.Tensor) *peel.Tensor, x *peel.Tensor) *peel.Tensor {
	return transforms.Grad(f)(x)
}

func transformsVmap2(f func(a, b *peel.Tensor) *peel.Tensor, a, b *peel.Tensor) *peel.Tensor {
	return transforms.Vmap2(f)(a, b)
}
