package peel

import "runtime/debug"

// Version returns the version of the peel module in this binary's build
// information, such as "v0.3.0" ("(devel)" when built inside the
// module, "unknown" without build information). Checkpoints and
// exported programs record it.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if bi.Main.Path == "github.com/peel-ml/peel" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/peel-ml/peel" {
			return d.Version
		}
	}
	return "unknown"
}
