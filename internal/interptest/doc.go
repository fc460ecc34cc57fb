// Package interptest holds the helpers the tests of interp and autodiff
// share: concrete tensors on the CPU backend, traces, and a bit-for-bit
// comparison of results (any NaN equals any NaN).
package interptest
