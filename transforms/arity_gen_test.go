package transforms_test

import (
	"os/exec"
	"testing"
)

// TestArityGenerated: arity_gen.go is what genarity writes now (go
// generate ./transforms after a change to the templates), so CI fails on
// a stale file.
func TestArityGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs genarity")
	}
	out, err := exec.Command("go", "run", "./internal/genarity", "-check").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}
