//go:build mpi && !cgo

package dist

// The mpi build tag needs cgo (Open MPI is a C library, reached through
// cgo): built with CGO_ENABLED=0, the package stops here, on a name that
// says what to do, rather than on the names the cgo files would define.
var _ = mpiBuildTagNeedsCgo_SetCGO_ENABLED1_AndInstallLibopenmpiDevAndPkgConfig
