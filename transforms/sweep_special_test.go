package transforms_test

import "math"

// Kinks and second-derivative checks of the ops of special.go and
// elementwise_activation.go, merged into the sweep's tables.
func init() {
	for name, k := range map[string]func(a []*T, y *T) bool{
		"peel.Trunc": func(a []*T, _ *T) bool { return nearInteger(a[0], 1) },
		"peel.Frac":  func(a []*T, _ *T) bool { return nearInteger(a[0], 1) },
		// |x| at x = 0, and the sign flip at y = 0.
		"peel.Copysign": func(a []*T, _ *T) bool {
			return anyPair(a, func(x, y float64) bool { return math.Abs(x) < kinkGap || math.Abs(y) < kinkGap })
		},
		"peel.Fmax": func(a []*T, _ *T) bool { return anyPair(a, func(x, y float64) bool { return math.Abs(x-y) < kinkGap }) },
		"peel.Fmin": func(a []*T, _ *T) bool { return anyPair(a, func(x, y float64) bool { return math.Abs(x-y) < kinkGap }) },
		"peel.Hypot": func(a []*T, _ *T) bool {
			return anyPair(a, func(x, y float64) bool { return math.Hypot(x, y) < kinkGap })
		},
		// The second derivative jumps at 0 (the first too for alpha ≠ 1
		// and for LeakyReLU).
		"peel.ELU":       func(a []*T, _ *T) bool { return nearValues(a[0], 0) },
		"peel.SELU":      func(a []*T, _ *T) bool { return nearValues(a[0], 0) },
		"peel.LeakyReLU": func(a []*T, _ *T) bool { return nearValues(a[0], 0) },
		"peel.Softsign":  func(a []*T, _ *T) bool { return nearValues(a[0], 0) },
		"peel.HardTanh":  func(a []*T, _ *T) bool { return nearValues(a[0], -1, 1) },
		"peel.HardSwish": func(a []*T, _ *T) bool { return nearValues(a[0], -3, 3) },
		"peel.Logit/eps=0.1": func(a []*T, _ *T) bool {
			return nearValues(a[0], 0.1, 0.9)
		},
	} {
		kinks[name] = k
	}
	for name, at0 := range map[string]bool{
		"peel.Asin": true, "peel.Atan": true, "peel.Sinh": true, "peel.Cosh": true, "peel.Asinh": true,
		"peel.Atanh": true, "peel.Erfc": true, "peel.Erfinv": true, "peel.Exp2": true, "peel.Log2": false,
		"peel.Lgamma": false, "peel.Digamma": false, "peel.SiLU": true, "peel.Mish": true,
	} {
		gradGradOps[name] = at0
	}
}
