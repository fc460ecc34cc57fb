package customop

// Arity returns the number of operands the op takes.
func (o *Op) Arity() int { return o.arity }
