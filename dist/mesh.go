package dist

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// AxisSpec is one named axis of a Mesh and its number of devices.
type AxisSpec struct {
	Name string
	Size int
}

// MeshAxis returns the mesh axis name of size devices.
func MeshAxis(name string, size int) AxisSpec { return AxisSpec{name, size} }

// Mesh is a set of devices arranged along named axes, JAX's Mesh: the
// devices of a {"data": 2, "model": 2} mesh are the four coordinates
// (d, m), numbered row-major (device 1 is (0, 1)). A device of the
// in-process engine is a goroutine; collectives along an axis connect the
// devices that differ only in that axis's coordinate (a Communicator per
// axis and line of devices).
type Mesh struct {
	axes []AxisSpec
	// proc, for a mesh of processes (NewProcessMesh), is this process's
	// device and its communicators; nil for the in-process engine.
	proc *procDevice
}

// procDevice is this process's device of a process mesh: its number
// (its rank in the world), and one communicator per mesh axis.
type procDevice struct {
	index int
	world Communicator
	comms []Communicator
}

// splitter is a Communicator that can split into sub-communicators
// (MPI_Comm_split).
type splitter interface {
	Split(color, key int) Communicator
}

// Split returns the communicator of the members of c that pass the same
// color, ranked by key (ties by their rank in c): MPI_Comm_split, for
// process subgroups (the processes of one machine, a pipeline stage's
// data-parallel group). Every member of c calls it, in the same order as
// its other collectives. A process mesh's axes are split from the world
// this way; a communicator of one member is its own subgroup. It panics
// with *peel.Error when color is negative or c cannot split: an
// in-process device's communicator of several members, whose subgroups
// are the axes of its mesh (NewMesh with more axes, Device.Comm).
func Split(c Communicator, color, key int) Communicator {
	const op = "dist.Split"
	if c == nil {
		meshErrorf(op, "the communicator is nil")
	}
	if color < 0 {
		meshErrorf(op, "color %d is negative (every member joins the group of its color)", color)
	}
	if c.Size() == 1 {
		return c // a group of one
	}
	sp, ok := c.(splitter)
	if !ok {
		meshErrorf(op, "an in-process communicator cannot split: an in-process mesh's subgroups are its axes (NewMesh with one axis per group, Device.Comm)")
	}
	return sp.Split(color, key)
}

// NewProcessMesh returns the mesh whose devices are the processes of
// the job (World: mpirun's processes with the mpi build tag), device d
// the process of rank d, so the product of the axes' sizes must be the
// number of processes. Each process runs its own device: ShardMap on
// it runs the program on this process's blocks, with the collectives
// over MPI (one communicator per mesh axis, split from the world), and
// assembles the results from every process's blocks, so every process
// gets the whole result as on one machine. It panics with *peel.Error as
// NewMesh does, and when the sizes do not multiply to the number of
// processes.
func NewProcessMesh(axes ...AxisSpec) *Mesh {
	const op = "dist.NewProcessMesh"
	m := NewMesh(axes...)
	w := World()
	if m.Size() != w.Size() {
		meshErrorf(op, "%v has %d devices, but the job has %d processes (mpirun -np %d)", m, m.Size(), w.Size(), m.Size())
	}
	pd := &procDevice{index: w.Rank(), world: w, comms: make([]Communicator, len(m.axes))}
	c := m.Coords(w.Rank())
	for i := range m.axes {
		if w.Size() == 1 {
			pd.comms[i] = w
			continue
		}
		// The line of devices along axis i through c: those with c's
		// other coordinates (color), ranked by their coordinate on i.
		color := 0
		for k, a := range m.axes {
			if k != i {
				color = color*a.Size + c[k]
			}
		}
		pd.comms[i] = Split(w, color, c[i])
	}
	m.proc = pd
	return m
}

// Local returns the devices this process runs: every device of an
// in-process mesh, this process's alone of a process mesh.
func (m *Mesh) Local() []int {
	if m.proc != nil {
		return []int{m.proc.index}
	}
	out := make([]int, m.Size())
	for i := range out {
		out[i] = i
	}
	return out
}

// Gather returns, on every process, the value x of every device: the
// local values of an in-process mesh (xs[d] for device d), or the
// processes' values exchanged (each process passes its device's value
// at xs[its index]). Every process of a process mesh must call it.
func (m *Mesh) Gather(xs []*peel.Tensor) []*peel.Tensor {
	if m.proc == nil {
		return xs
	}
	g := m.proc.world.AllGather(xs[m.proc.index])
	out := make([]*peel.Tensor, m.Size())
	for d := range out {
		out[d] = peel.Select(g, 0, d)
	}
	return out
}

// NewMesh returns the in-process mesh of the given axes, 1-D
// (MeshAxis("data", 2)) or more. It panics with *peel.Error when there is
// no axis, a name is empty or repeated, or a size is not positive.
func NewMesh(axes ...AxisSpec) *Mesh {
	const op = "dist.NewMesh"
	if len(axes) == 0 {
		meshErrorf(op, "no axis")
	}
	for i, a := range axes {
		if a.Name == "" {
			meshErrorf(op, "axis %d has no name", i)
		}
		if a.Size <= 0 {
			meshErrorf(op, "axis %q has size %d", a.Name, a.Size)
		}
		for _, b := range axes[:i] {
			if b.Name == a.Name {
				meshErrorf(op, "axis %q is named twice", a.Name)
			}
		}
	}
	return &Mesh{axes: slices.Clone(axes)}
}

func meshErrorf(op, format string, args ...any) {
	err := interp.Errorf(format, args...)
	err.Ops = []string{op}
	panic(err)
}

// Axes returns the mesh's axes, in order.
func (m *Mesh) Axes() []AxisSpec { return slices.Clone(m.axes) }

// Size returns the number of devices.
func (m *Mesh) Size() int {
	n := 1
	for _, a := range m.axes {
		n *= a.Size
	}
	return n
}

// AxisSize returns the size of the named axis, or 0 when the mesh has no
// such axis.
func (m *Mesh) AxisSize(name string) int {
	for _, a := range m.axes {
		if a.Name == name {
			return a.Size
		}
	}
	return 0
}

// Coords returns device d's coordinates along the axes.
func (m *Mesh) Coords(d int) []int {
	c := make([]int, len(m.axes))
	for i := len(m.axes) - 1; i >= 0; i-- {
		c[i] = d % m.axes[i].Size
		d /= m.axes[i].Size
	}
	return c
}

// Device returns the number of the device at coordinates c.
func (m *Mesh) Device(c []int) int {
	d := 0
	for i, a := range m.axes {
		d = d*a.Size + c[i]
	}
	return d
}

func (m *Mesh) String() string {
	parts := make([]string, len(m.axes))
	for i, a := range m.axes {
		parts[i] = fmt.Sprintf("%q: %d", a.Name, a.Size)
	}
	return "Mesh{" + strings.Join(parts, ", ") + "}"
}

// Run runs fn once on every device of the mesh, concurrently, each in a
// goroutine that binds the mesh's axis names (so collectives over them
// and AxisIndex work inside fn), and returns when all have returned. A
// device that panics makes every device's pending and later collectives
// fail (none waits forever), and Run re-panics with the first device's
// error, naming the device; so does a device whose collective fails.
// Devices get results of their own and share nothing they did not
// exchange; fn may keep per-device state in its closure, indexed by d.
func (m *Mesh) Run(fn func(d int)) { m.RunDevices(func(dv *Device) { fn(dv.Index) }) }

// Device is one device of a running mesh, as RunDevices gives it to
// the function: its number, its coordinates, and its collectives.
type Device struct {
	// Index is the device's number, Coords its coordinates along the
	// mesh's axes.
	Index  int
	Coords []int
	axes   map[string]*device
}

// Collective applies collective primitive p (package prims' collective
// family) to the device's operand x over the axes params name, as
// evaluating it on the device would, without looking up the goroutine's
// axis bindings (ShardMap's device programs answer their collectives
// through it). It panics with *peel.Error when the mesh lacks an axis,
// and as the collectives do.
func (dv *Device) Collective(p *interp.Prim, params any, x *peel.Tensor) *peel.Tensor {
	at := func(name string) *device {
		d, ok := dv.axes[name]
		if !ok {
			interp.Panicf("%s over axis %q, which the mesh does not have", p.Name, name)
		}
		return d
	}
	switch pp := params.(type) {
	case prims.CollectiveParams:
		for k, name := range pp.Axes {
			x = at(name).Collective(p, prims.CollectiveParams{Axes: []string{name}, Sizes: []int{pp.Sizes[k]}}, x)
		}
		return x
	case prims.GatherParams:
		return at(pp.Axis).Collective(p, params, x)
	case prims.AllToAllParams:
		return at(pp.Axis).Collective(p, params, x)
	case prims.PermuteParams:
		return at(pp.Axis).Collective(p, params, x)
	}
	interp.Panicf("%s is not a collective", p.Name)
	return nil
}

// Comm returns the device's communicator along the mesh axis name: the
// members are the devices that differ from this one only in that axis's
// coordinate, ranked by it. A data-parallel step (package dist/ddp)
// takes it. It panics with *peel.Error when the mesh has no such axis.
func (dv *Device) Comm(name string) Communicator {
	d, ok := dv.axes[name]
	if !ok {
		meshErrorf("dist.Device.Comm", "the mesh has no axis %q", name)
	}
	return d.comm
}

// RunDevices is Run that gives fn the Device.
func (m *Mesh) RunDevices(fn func(dv *Device)) {
	if m.proc != nil {
		m.runProcess(fn)
		return
	}
	n := m.Size()
	// One group per axis and line of devices: the devices that differ
	// only in that axis's coordinate.
	groups := make([]map[string]*group, len(m.axes))
	for i, a := range m.axes {
		groups[i] = map[string]*group{}
		for d := range n {
			k := lineKey(m.Coords(d), i)
			if groups[i][k] == nil {
				groups[i][k] = newGroup(a.Size, a.Name)
			}
		}
	}
	var all []*group
	for _, gs := range groups {
		for _, g := range gs {
			all = append(all, g)
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for d := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := m.Coords(d)
			mine := make([]*group, len(m.axes))
			frames := make([]interp.AxisFrame, len(m.axes))
			dv := &Device{Index: d, Coords: c, axes: map[string]*device{}}
			for i, a := range m.axes {
				g := groups[i][lineKey(c, i)]
				mine[i] = g
				dev := &device{comm: &inproc{g: g, rank: c[i]}, axis: a.Name}
				dv.axes[a.Name] = dev
				frames[i] = interp.AxisFrame{Name: a.Name, Size: a.Size, Device: dev, Index: indexScalar(c[i])}
			}
			defer interp.PushAxis(frames...)()
			defer func() {
				if r := recover(); r != nil {
					err, ok := r.(error)
					if !ok {
						err = fmt.Errorf("%v", r)
					}
					errs[d] = err
					for _, g := range all {
						g.fail(fmt.Errorf("device %d %v failed: %w", d, c, err))
					}
					return
				}
				for i, g := range mine {
					g.finish(c[i])
				}
			}()
			fn(dv)
		}()
	}
	wg.Wait()
	for d, err := range errs {
		if err != nil {
			if e, ok := err.(*peel.Error); ok {
				e.Msg = fmt.Sprintf("device %d %v of %v: %s", d, m.Coords(d), m, e.Msg)
				panic(e)
			}
			panic(interp.Errorf("device %d %v of %v: %v", d, m.Coords(d), m, err))
		}
	}
	runtime.KeepAlive(groups)
}

// runProcess runs fn on this process's device of a process mesh, in the
// calling goroutine. A panic aborts the job (Abort): the other
// processes would otherwise wait in a collective forever.
func (m *Mesh) runProcess(fn func(dv *Device)) {
	p := m.proc
	c := m.Coords(p.index)
	dv := &Device{Index: p.index, Coords: c, axes: map[string]*device{}}
	frames := make([]interp.AxisFrame, len(m.axes))
	for i, a := range m.axes {
		dev := &device{comm: p.comms[i], axis: a.Name}
		dv.axes[a.Name] = dev
		frames[i] = interp.AxisFrame{Name: a.Name, Size: a.Size, Device: dev, Index: indexScalar(c[i])}
	}
	defer interp.PushAxis(frames...)()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "dist: device %d %v of %v failed: %v\n", p.index, c, m, r)
			if p.world.Size() > 1 {
				Abort(1)
			}
			panic(r)
		}
	}()
	fn(dv)
}

// indexScalar returns the i64 scalar i.
func indexScalar(i int) *peel.Tensor { return peel.Reshape(peel.FromInt64s([]int64{int64(i)})) }

// lineKey identifies the line of devices along axis i through
// coordinates c: c with its i-th coordinate left out.
func lineKey(c []int, i int) string {
	var b strings.Builder
	for k, v := range c {
		if k != i {
			fmt.Fprintf(&b, "%d,", v)
		}
	}
	return b.String()
}

// device answers the collectives over one mesh axis for one device
// (prims.Device) with its communicator.
type device struct {
	comm Communicator
	axis string
}

func (d *device) Collective(p *interp.Prim, params any, x *peel.Tensor) *peel.Tensor {
	c := d.comm
	n := c.Size()
	switch p {
	case prims.Psum:
		return c.AllReduce(x, Sum)
	case prims.Pmax:
		return c.AllReduce(x, Max)
	case prims.Pmin:
		return c.AllReduce(x, Min)
	case prims.AllGather:
		gp := params.(prims.GatherParams)
		g := peel.MoveAxis(c.AllGather(x), 0, gp.Dim) // the pieces at Dim
		if gp.Tiled {
			g = peel.Flatten(g, gp.Dim, gp.Dim+1)
		}
		return g
	case prims.PsumScatter:
		gp := params.(prims.GatherParams)
		if gp.Tiled {
			s := x.Shape()
			x = peel.Reshape(x, slices.Concat(s[:gp.Dim], []int{n, s[gp.Dim] / n}, s[gp.Dim+1:])...)
		}
		return c.ReduceScatter(peel.MoveAxis(x, gp.Dim, 0))
	case prims.AllToAll:
		ap := params.(prims.AllToAllParams)
		s := x.Shape()
		blocks := peel.Reshape(x, slices.Concat(s[:ap.Split], []int{n, s[ap.Split] / n}, s[ap.Split+1:])...)
		got := c.AllToAll(peel.MoveAxis(blocks, ap.Split, 0)) // [senders, …x with Split shrunk]
		// The senders join Concat as its outer part.
		got = peel.MoveAxis(got, 0, ap.Concat)
		return peel.Flatten(got, ap.Concat, ap.Concat+1)
	case prims.Ppermute:
		return c.Permute(x, params.(prims.PermuteParams).Perm)
	}
	interp.Panicf("%s is not a collective", p.Name)
	return nil
}
