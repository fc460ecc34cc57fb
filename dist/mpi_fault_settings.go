package dist

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTimeout is how long an MPI collective may wait before the
// watchdog aborts the job, unless PEEL_DIST_TIMEOUT or SetTimeout says
// otherwise.
const DefaultTimeout = 10 * time.Minute

// The fault settings: the watchdog's timeout and the check mode, read
// from the environment on first use and changed by SetTimeout and
// SetCheck.
var (
	faultEnvOnce sync.Once
	faultTimeout atomic.Int64 // nanoseconds; 0: no watchdog
	faultCheck   atomic.Bool
)

// loadFaultEnv reads PEEL_DIST_TIMEOUT and PEEL_DIST_CHECK once. It
// panics with *peel.Error when either is set to something it cannot
// read.
func loadFaultEnv() {
	faultEnvOnce.Do(func() {
		faultTimeout.Store(int64(DefaultTimeout))
		if s := os.Getenv("PEEL_DIST_TIMEOUT"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				meshErrorf("dist", "PEEL_DIST_TIMEOUT=%q is not a duration such as 30s or 10m (0 turns the watchdog off)", s)
			}
			faultTimeout.Store(int64(d))
		}
		if s := os.Getenv("PEEL_DIST_CHECK"); s != "" {
			on, err := strconv.ParseBool(s)
			if err != nil {
				meshErrorf("dist", "PEEL_DIST_CHECK=%q is not a boolean (1 turns the check on, 0 off)", s)
			}
			faultCheck.Store(on)
		}
	})
}

// SetTimeout sets how long a collective of the MPI engine may wait
// before the watchdog ends the job (Abort): a process that died or
// stopped calling collectives must not leave the others waiting forever.
// 0 turns the watchdog off. The default is DefaultTimeout, or
// PEEL_DIST_TIMEOUT (a Go duration, "30s") when set. Without the mpi
// build tag it is kept but does nothing: the in-process engine never
// waits on a failed or finished device. SetTimeout panics with
// *peel.Error when d is negative.
func SetTimeout(d time.Duration) {
	loadFaultEnv()
	if d < 0 {
		meshErrorf("dist.SetTimeout", "negative timeout %v (0 turns the watchdog off)", d)
	}
	faultTimeout.Store(int64(d))
}

// SetCheck turns the MPI engine's debug check on or off: before each
// collective every process all-gathers a small record of its call (the
// collective and reduction, dtype, shape, element count, permutation),
// and a disagreement panics on every process with a *peel.Error naming
// the collective, the disagreeing ranks and their operands. It costs one
// small all-gather per collective, so it is off unless PEEL_DIST_CHECK=1
// or SetCheck(true). Without the mpi build tag it is kept but does
// nothing: the in-process engine always checks.
func SetCheck(on bool) {
	loadFaultEnv()
	faultCheck.Store(on)
}
