//go:build !amd64 || purego

package cpu

// haveSkinny says the skinny kernels can run: not on this architecture.
const haveSkinny = false

func skinnyKernel[T float32 | float64](k int, a0, a1 *T, b *[5]*T, c *[10]T) {
	panic("cpu: no skinny kernel")
}
