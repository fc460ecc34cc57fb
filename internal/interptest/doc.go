// Package interptest holds the helpers the tests of interp and autodiff
// share: concrete tensors on the CPU backend, traces, a bit-for-bit
// comparison of results (any NaN equals any NaN), and the check that an
// exported graph's encoding survives decoding (Reencodes), which the
// export tests of compiler and transforms run too.
package interptest
