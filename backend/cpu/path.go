package cpu

import (
	"fmt"
	"os"

	"github.com/peel-ml/peel/interp"
)

// kernelPath is a family of kernels, each narrower than the next: the
// portable Go loops (what other architectures and the purego build tag
// run), the AVX2+FMA assembly, and the AVX-512 assembly beside it (the
// wide GEMM micro-kernels and copies).
type kernelPath int

const (
	pathPurego kernelPath = iota
	pathAVX2
	pathAVX512
)

var pathNames = [...]string{pathPurego: "purego", pathAVX2: "avx2", pathAVX512: "avx512"}

func (p kernelPath) String() string { return pathNames[p] }

// choosePath returns the kernel path a process runs: the widest the CPU
// supports (best), or the one the PEEL_CPU variable names (env), which
// may only be narrower, so that a machine with AVX-512 tests and times
// the AVX2 and portable kernels too. It panics with a *peel.Error when
// env names no path, or one wider than the CPU supports: a run that
// asked for AVX-512 must not quietly test AVX2.
func choosePath(env string, best kernelPath) kernelPath {
	if env == "" {
		return best
	}
	for p, name := range pathNames {
		if env != name {
			continue
		}
		if kernelPath(p) > best {
			panic(&interp.Error{Msg: fmt.Sprintf("PEEL_CPU=%s: this CPU supports the kernels up to %s (purego, avx2, avx512, narrowest first)", env, best)})
		}
		return kernelPath(p)
	}
	panic(&interp.Error{Msg: fmt.Sprintf("PEEL_CPU=%q names no kernel path: want purego, avx2 or avx512", env)})
}

// cpuPath is the kernel path of this process (see choosePath).
var cpuPath = choosePath(os.Getenv("PEEL_CPU"), bestPath())

// Path names the kernels this process runs: "avx512" (the AVX2+FMA
// kernels and the AVX-512 GEMM micro-kernels and copies), "avx2" or
// "purego" (portable Go loops, and gonum's BLAS for matrix products). It
// is the widest the CPU supports unless the PEEL_CPU environment variable
// names a narrower one; the backend's initialization panics when
// PEEL_CPU names an unknown path or one the CPU lacks.
func Path() string { return cpuPath.String() }
