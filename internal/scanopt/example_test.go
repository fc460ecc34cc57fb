package scanopt_test

import (
	"fmt"

	"github.com/peel-ml/peel/internal/scanopt"
)

// A scan option is a function of the Config; the options a user passes
// are applied in order to New().
func Example() {
	reverse := func(c *scanopt.Config) { c.Reverse = true }
	length := func(c *scanopt.Config) { c.Length, c.ScanOnly = 3, "transforms.Length" }
	c := scanopt.New()
	for _, o := range []func(*scanopt.Config){reverse, length} {
		o(&c)
	}
	fmt.Printf("%+v\n", c)
	// Output: {Reverse:true Length:3 Unroll:1 Policy:<nil> ScanOnly:transforms.Length}
}
