package testsize_test

import (
	"fmt"
	"os"

	"github.com/peel-ml/peel/internal/testsize"
)

// A sweep over 10⁴ inputs by default and 10⁶ when PEEL_FULL is set.
func Example() {
	defer os.Setenv("PEEL_FULL", os.Getenv("PEEL_FULL"))
	os.Setenv("PEEL_FULL", "1")
	fmt.Println(testsize.Full(), testsize.Pick(10_000, 1_000_000))
	os.Setenv("PEEL_FULL", "")
	fmt.Println(testsize.Full(), testsize.Pick(10_000, 1_000_000))
	// Output:
	// true 1000000
	// false 10000
}
