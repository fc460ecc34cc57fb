package optest_test

import (
	"fmt"

	"github.com/peel-ml/peel/internal/optest"
)

// Each registry entry has samples and a reference; generic tests sweep
// them all.
func ExampleAll() {
	for _, op := range optest.All() {
		if op.Name != "peel.Add" {
			continue
		}
		s := op.Samples()[3]
		got := optest.ToHost(op.F(s.Args))
		want := op.Ref([]optest.Host{optest.ToHost(s.Args[0]), optest.ToHost(s.Args[1])})
		fmt.Println(s.Name, optest.Compare(got, want, 0) == "")
	}
	// Output:
	// i64[2 3][3] true
}
