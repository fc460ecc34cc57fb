package functionalize

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Adopted records the lower boxes one interpreter level adopted (its
// Store.Adopt made them values of the level) with the content each held
// below, and gives them their final values when the level ends. It is
// the one write-back of every interpreter that adopts (functionalize,
// the autodiff levels): each box gets its content below back, and the
// roots of view chains receive their final values by an in-place write
// at their own level (WriteBack), so every alias of them, at every
// level, sees the function's effect as eager evaluation would. A box is
// never left holding a value of the ending level.
type Adopted struct {
	boxes []*T
	below map[*T]*T
}

// Add records that lower box x, which held below, was adopted.
func (a *Adopted) Add(x, below *T) {
	if a.below == nil {
		a.below = map[*T]*T{}
	}
	a.boxes = append(a.boxes, x)
	a.below[x] = below
}

// Has reports whether x was adopted.
func (a *Adopted) Has(x *T) bool { return a.below[x] != nil }

// End gives every adopted box its final value, final(box): a value below
// the level, asked for every box before any is restored. Each box first
// gets its content below back; then each is written with WriteBack,
// except a view of an adopted base: it sees the base's write as an
// alias does at its level (eval shares the buffer; vmap the physical
// value, or recomputes a view whose physical value is a copy;
// functionalize and the autodiff levels recompute a view whose base's
// generation moved on), and a view being staged, which aliases nothing,
// is rebound to its final value. take, when not nil, may take over the
// write-back of a box (it returns true; the box keeps its content
// below). It panics with *Error when a write-back is refused.
func (a *Adopted) End(final func(*T) *T, take func(box, final *T) bool) {
	finals := make([]*T, len(a.boxes))
	for i, box := range a.boxes {
		finals[i] = final(box)
	}
	boxes := a.boxes
	a.Restore()
	for i, box := range boxes {
		if v := interp.ViewInfo(box); v != nil && containsBox(boxes, v.Base) {
			if interp.IsStaged(box) {
				interp.Rebind(box, finals[i]) // staging keeps no aliases
			}
			continue
		}
		if take != nil && take(box, finals[i]) {
			continue
		}
		WriteBack(box, finals[i])
	}
}

// Restore gives every adopted box its content below back, writing
// nothing (the level's function panicked), and forgets them.
func (a *Adopted) Restore() {
	for _, box := range a.boxes {
		interp.Rebind(box, a.below[box])
	}
	a.boxes, a.below = nil, nil
}

func containsBox(boxes []*T, x *T) bool {
	for _, b := range boxes {
		if b == x {
			return true
		}
	}
	return false
}

// WriteBack gives the caller's tensor orig the value v, the final value
// of a box a level answered writes into out of place: an in-place copy_
// bound on orig and v, so it runs at the highest of their levels (eval
// writes orig's buffer, vmap its physical value; functionalize and the
// autodiff levels, interp.WriteAdopter, adopt orig and write it back in
// turn when they end), and every alias of orig sees the write. orig is
// rebound instead when it is being staged (a staging level records no
// mutation), or when it is concrete and v is a value of a level that
// does not adopt writes: a tensor created inside Vmap(Functionalize(f))
// becomes batched that way, and a concrete tensor written while being
// staged holds the traced value. It panics with *Error where the write
// is refused.
func WriteBack(orig, v *T) {
	if interp.IsStaged(orig) || (orig.IsConcrete() && !v.IsConcrete() && !interp.AdoptsWrites(v)) {
		interp.Rebind(orig, v)
		return
	}
	interp.Bind(prims.CopyInPlace, nil, orig, v)
}
