package backend

// The converters' slow reference paths, for the tests of the bit-level
// ones.
var (
	RoundHalf  = roundHalf
	IntForHalf = intForHalf
)
