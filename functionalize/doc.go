// Package functionalize is the functionalize interpreter: it turns
// mutation and aliasing into pure primitives. Every in-place primitive is
// answered out of place and the destination box is rebound to the new
// value; a write through a view is written into its parent through the
// view's inverse (ScatterView) up to the base, whose generation moves on,
// and every other alias is recomputed from the base the next time it is
// used. Nothing below the level is mutated while the function runs, so a
// graph staged through it has no mutation primitive; boxes of lower levels
// that the function wrote get their final values when the level ends.
//
// Users call transforms.Functionalize; the autodiff interpreters reuse
// ScatterView to write through views at their own level.
package functionalize
