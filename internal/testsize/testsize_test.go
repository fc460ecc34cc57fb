package testsize_test

import (
	"testing"

	"github.com/peel-ml/peel/internal/testsize"
)

func TestFull(t *testing.T) {
	for _, c := range []struct {
		env  string
		want bool
	}{{"", false}, {"0", false}, {"1", true}, {"yes", true}} {
		t.Setenv("PEEL_FULL", c.env)
		if got := testsize.Full(); got != c.want {
			t.Errorf("PEEL_FULL=%q: Full() = %v, want %v", c.env, got, c.want)
		}
		if got, want := testsize.Pick("quick", "full"), map[bool]string{false: "quick", true: "full"}[c.want]; got != want {
			t.Errorf("PEEL_FULL=%q: Pick = %q, want %q", c.env, got, want)
		}
	}
}
