package scanopt

// Config is the configuration a list of scan options sets, applied in
// order (a later option overrides an earlier one).
type Config struct {
	// Reverse runs the scan from the end of the axis (peel.Reverse).
	Reverse bool
	// Length is the number of steps of transforms.Scan, -1 when unset.
	Length int
	// Unroll is the number of steps per iteration of transforms.Scan.
	Unroll int
	// Policy is transforms.StepRemat's policy (a *transforms.SavePolicy),
	// nil when unset.
	Policy any
	// ScanOnly names the last option applied that only transforms.Scan
	// reads ("transforms.Length"), empty when there is none.
	ScanOnly string
}

// New returns the configuration of no options: forward, Length unset,
// Unroll 1.
func New() Config { return Config{Length: -1, Unroll: 1} }
