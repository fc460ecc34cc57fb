// Package dist holds peel's named axes and collectives: JAX's psum,
// pmean, pmax, pmin, all_gather, psum_scatter, all_to_all, ppermute,
// axis_index.
//
// An axis name is bound by transforms.Vmap with transforms.AxisName: the
// function runs once per lane, as one batched computation, and a
// collective over the name sees every lane:
//
//	f := func(x *peel.Tensor) *peel.Tensor { return x.Div(dist.Psum(x, "i")) }
//	y := transforms.Vmap(f, transforms.AxisName("i"))(xs) // each row of xs over the sum of the rows
//
// Each lane (or device) i applies a collective to its own value x_i
// along an axis of n lanes and gets:
//
//	Psum(x, names…)        Σ_k x_k (over every named axis)
//	Pmean, Pmax, Pmin      the mean, maximum, minimum
//	AllGather(x, name)     the x_k stacked along a new array axis (Tiled: concatenated)
//	PsumScatter(x, name)   block i of Σ_k x_k (reduce-scatter)
//	AllToAll(x, name, s, c)  block i of every x_k along s, concatenated along c
//	Ppermute(x, name, perm)  x_k for the pair (k, i) of perm, or zeros
//	AxisIndex(name)        i;  AxisSize(name): n
//
// Collectives are primitives (package prims) with shape, JVP, transpose
// and batching rules, so they compose with every transform: Grad, JVP,
// VJP, the Jacobians, Vmap, Functionalize, Compile, Checkpoint and the
// control flow of package transforms. Their derivatives read the program
// lane by lane: psum's transpose is psum, all_gather's psum_scatter (and
// back), all_to_all's all_to_all with the axes exchanged, ppermute's the
// inverse permutation (docs/design/named-axes.md, "Derivatives: the
// rule we chose").
//
// Names nest (an inner Vmap binds another name; Psum(x, "i", "j") sums
// over both) and an inner binding of a name shadows an outer one. A
// collective over a name no enclosing Vmap binds panics with *peel.Error
// naming the name and the names that are bound.
//
// A collective finds its axis through its operand (the name lives on the
// Vmap's level), so it works in a goroutine the function starts as it
// does in the function itself. AxisIndex and AxisSize (no operand), and a
// collective on a value that does not vary along the axis (a constant,
// the cotangent that a gradient through a collective carries back), find
// it through the goroutine running the Vmap or ShardMap: a goroutine you
// start gets it with WithAxes (go dist.WithAxes(f)()).
//
// # Devices
//
// A Mesh is a set of devices along named axes (NewMesh(MeshAxis("data",
// 2), MeshAxis("model", 2))). transforms.ShardMap runs a function on
// every device, each on its blocks of the arguments as specs say
// (P("data", nil): rows split over "data"; P(): all of it), and
// assembles the results; inside, the collectives over the mesh's axes
// connect the devices. The devices of NewMesh's in-process engine are
// goroutines that run concurrently and exchange values through shared
// memory (a Communicator per mesh axis and line of devices); reductions
// combine values in rank order, so results are the same on every run and
// every device. A device that fails makes every other device's
// collectives fail (none waits forever) and the ShardMap re-raises the
// error naming the device. Mesh.Run runs plain Go code on the devices
// the same way.
//
// The Communicator interface (AllReduce, AllGather, ReduceScatter,
// AllToAll, Permute, Barrier, Broadcast, and the non-blocking
// IAllReduce) is all a device needs from its engine, so another engine
// (MPI across processes) runs the same programs.
//
// # MPI
//
// With the mpi build tag, World is the processes of an mpirun job and
// NewProcessMesh makes them a mesh, one device each. MPI runs with
// MPI_THREAD_MULTIPLE: any goroutine may call a collective, and a cgo
// call runs on the calling goroutine's OS thread until it returns, so
// MPI sees one thread per call. Members must make their collectives in
// the same order.
//
// Every collective first makes the members agree on the call: without
// the check mode, an all-reduce of 64 bytes (the collective, reduction,
// dtype and element count, and their negations, under MPI_MAX), so that
// operands of different sizes stop every member with a *peel.Error
// instead of reaching MPI (Open MPI 4.1 reports a small excess as
// truncation on one member only, gives another a wrong result, and
// writes a large one past the receiving buffer). Barrier is this
// agreement. A job of one process skips it.
//
// The check mode (SetCheck, or PEEL_DIST_CHECK=1) replaces the guard by
// an all-gather of a fixed record of each member's call (collective and
// reduction, dtype, communicator size, shape up to 8 dimensions, element
// count, a hash of Permute's pairs): a disagreement panics on every
// member with a *peel.Error naming the collective, rank 0 and the first
// rank that differs, and their operands ("dist (MPI): AllReduce(sum):
// rank 0 has f32[3,4] but rank 1 has f32[4,3]"). It costs an all-gather
// of 128 bytes per member per collective, so it is a debug mode, off by
// default.
//
// Operands are read where they lie and results written into buffers of
// the CPU backend's cache, with no copy in Go (half floats travel as f32,
// bools as u8). IAllReduce and IAllReduceInPlace (MPI_IN_PLACE on a
// tensor given up) start a reduction and return a Request. Where the
// machine has a core to spare beyond one per local process, they run
// MPI_Iallreduce and a progress goroutine advances it (MPI_Test on a
// locked OS thread, about every 15 µs) while the caller computes; Wait
// completes it with MPI_Wait. Where it has not (two processes on two
// cores), polling beside the computation costs more than it hides,
// because shared-memory communication is the CPU's own work: the
// reduction is deferred to its Wait, or to the next collective on the
// communicator, in start order, and runs as MPI_Allreduce.
// PEEL_MPI_PROGRESS=thread or =wait chooses.
//
// A watchdog times every blocking call (AllReduce, AllGather,
// ReduceScatter, AllToAll, Permute, Barrier, Split, IAllReduce's start
// and Request.Wait): when one has not completed after the timeout
// (SetTimeout, or PEEL_DIST_TIMEOUT, a Go duration; DefaultTimeout, 10
// minutes, unless set; 0 turns it off), the process prints the
// collective, its operand, its rank and communicator size and how long
// it waited to stderr, and aborts the job (Abort: MPI_Abort, every
// process ends non-zero). One goroutine scans a table of the calls in
// flight; a call adds a lock and a clock read on entry and exit and no
// allocation. A process that panics in a device of a process mesh
// aborts the job too; one that exits (os.Exit, a crash) ends the job
// through mpirun, which kills the other processes. A panic (a
// *peel.Error included) that reaches a `defer dist.Finalize()` in main
// (the defer statement calling Finalize itself, not a closure around
// it) ends the job the same way, at once, with the panic's message, the
// rank and the stack printed: Finalize recovers it and aborts, where
// MPI_Finalize would have waited for processes that wait for this one.
// That covers a panic in a loss under ddp.ValueAndGrad3 or in a ShardMap
// body, which run on the caller's goroutine. MPI cannot cancel a
// collective, so none of these can be recovered from in the other
// processes: they end.
package dist
