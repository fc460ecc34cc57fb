package autodiff

import "testing"

// TestIncreasing: composite_lin's decoder accepts only index lists that
// strictly increase and stay below the count (a hostile file's index n
// would read past the operands).
func TestIncreasing(t *testing.T) {
	for _, c := range []struct {
		xs   []int
		n    int
		want bool
	}{
		{nil, 0, true}, {[]int{0}, 1, true}, {[]int{0, 2, 3}, 4, true},
		{[]int{0, 4}, 4, false}, {[]int{4}, 4, false}, {[]int{-1}, 4, false},
		{[]int{1, 1}, 4, false}, {[]int{2, 1}, 4, false},
	} {
		if got := increasing(c.xs, c.n); got != c.want {
			t.Errorf("increasing(%v, %d) = %v, want %v", c.xs, c.n, got, c.want)
		}
	}
}
