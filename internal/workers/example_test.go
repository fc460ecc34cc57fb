package workers_test

import (
	"fmt"

	"github.com/peel-ml/peel/internal/workers"
)

// Example sums the squares of 0…999 in four parts run in parallel.
func Example() {
	const n, parts = 1000, 4
	partial := make([]int, parts)
	workers.Run(parts, func(k int) {
		for i := k * n / parts; i < (k+1)*n/parts; i++ {
			partial[k] += i * i
		}
	})
	sum := 0
	for _, s := range partial {
		sum += s
	}
	fmt.Println(sum)
	// Output: 332833500
}
