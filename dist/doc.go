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
// inverse permutation (ARCHITECTURE.md, "Named axes and collectives").
//
// Names nest (an inner Vmap binds another name; Psum(x, "i", "j") sums
// over both) and an inner binding of a name shadows an outer one. A
// collective over a name no enclosing Vmap binds panics with *peel.Error
// naming the name and the names that are bound.
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
// AllToAll, Permute, Barrier) is all a device needs from its engine, so
// another engine (MPI across processes) runs the same programs.
package dist
