package interp_test

import (
	"testing"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Primitives registered by this test package at its initialization,
// directly and from a function literal.
var (
	primOfThisTest = interp.NewPrim("interptest.package", interp.Pure, func(_ any, in []interp.Aval) []interp.Aval { return in })
	primOfLiteral  = func() *interp.Prim {
		return interp.NewPrim("interptest.package.literal", interp.Pure, func(_ any, in []interp.Aval) []interp.Aval { return in })
	}()
)

// TestPrimPackage checks that a primitive records the package that
// called NewPrim, also from a function literal, and that Prims lists
// every registered primitive in ID order.
func TestPrimPackage(t *testing.T) {
	lit := primOfLiteral
	for _, c := range []struct {
		p    *interp.Prim
		want string
	}{
		{prims.Add, "github.com/peel-ml/peel/prims"},
		{prims.BroadcastInDim, "github.com/peel-ml/peel/prims"},
		{primOfThisTest, "github.com/peel-ml/peel/interp_test"},
		{lit, "github.com/peel-ml/peel/interp_test"},
	} {
		if got := c.p.Package(); got != c.want {
			t.Errorf("%s.Package() = %q, want %q", c.p.Name, got, c.want)
		}
	}
	all := interp.Prims()
	for i, p := range all {
		if p.ID != i {
			t.Fatalf("Prims()[%d] is %s with ID %d", i, p.Name, p.ID)
		}
		if interp.PrimByName(p.Name) != p {
			t.Errorf("PrimByName(%q) is not Prims()[%d]", p.Name, i)
		}
	}
	if all[lit.ID] != lit || all[primOfThisTest.ID] != primOfThisTest {
		t.Errorf("Prims does not list the primitives this test registered")
	}
}
