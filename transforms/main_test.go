package transforms_test

import (
	"os"
	"testing"

	"github.com/peel-ml/peel/batching"
)

// TestMain disables vmap's loop fallback for every test of the package:
// a built-in primitive without a real batching rule fails loudly instead
// of being run once per lane.
func TestMain(m *testing.M) {
	batching.SetFallback(batching.FallbackError)
	os.Exit(m.Run())
}
