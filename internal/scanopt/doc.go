// Package scanopt holds what a peel.ScanOption sets. One option type
// serves every scan along an axis: the cumulative operations of package
// peel (Cumsum, Cumprod, Cummax, Cummin, LogCumSumExp) and
// transforms.Scan. peel.Reverse sets Reverse; transforms.Length, Unroll
// and StepRemat set the fields only Scan reads, and name themselves in
// ScanOnly so that a cumulative operation given one can refuse it. The
// package is internal so that only peel's packages implement the option
// interface (its method takes a *Config).
package scanopt
