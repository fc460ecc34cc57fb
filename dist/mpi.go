//go:build mpi

package dist

/*
#cgo pkg-config: ompi-c
#cgo noescape peel_allreduce
#cgo nocallback peel_allreduce
#cgo noescape peel_allgather
#cgo nocallback peel_allgather
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

static int peel_init(int *provided) { return MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, provided); }
static int peel_initialized(void) { int f = 0; MPI_Initialized(&f); return f; }
static int peel_finalized(void) { int f = 0; MPI_Finalized(&f); return f; }
static MPI_Comm peel_world(void) { return MPI_COMM_WORLD; }
static MPI_Datatype peel_dtype(int k) {
	switch (k) {
	case 0: return MPI_DOUBLE;
	case 1: return MPI_FLOAT;
	case 2: return MPI_INT64_T;
	case 3: return MPI_INT32_T;
	case 4: return MPI_UINT8_T;
	case 5: return MPI_UINT16_T; // bfloat16's bits, reduced by the ops below
	}
	return MPI_DATATYPE_NULL;
}
// bfloat16 on the wire: MPI has no such type, so its bits travel as
// 16-bit integers and its reductions are user-defined operations that
// widen both operands to float (exact), combine them in float, and
// round the result back to bfloat16 (to nearest, ties to even; NaN stays
// NaN). A reduction over several processes rounds at each step of MPI's
// algorithm, as torch's bf16 compression hook's all-reduce does.
static float peel_bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static uint16_t peel_f2bf(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); // NaN, quiet
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}
static void peel_bf16_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
	uint16_t *a = in, *b = inout;
	for (int i = 0; i < *len; i++) b[i] = peel_f2bf(peel_bf2f(a[i]) + peel_bf2f(b[i]));
}
static void peel_bf16_max(void *in, void *inout, int *len, MPI_Datatype *dt) {
	uint16_t *a = in, *b = inout;
	for (int i = 0; i < *len; i++) {
		float x = peel_bf2f(a[i]), y = peel_bf2f(b[i]);
		if (x != x || x > y) b[i] = a[i]; // NaN wins
	}
}
static void peel_bf16_min(void *in, void *inout, int *len, MPI_Datatype *dt) {
	uint16_t *a = in, *b = inout;
	for (int i = 0; i < *len; i++) {
		float x = peel_bf2f(a[i]), y = peel_bf2f(b[i]);
		if (x != x || x < y) b[i] = a[i];
	}
}
static MPI_Op peel_bf16_ops[3];
static void peel_make_ops(void) {
	MPI_Op_create(peel_bf16_sum, 1, &peel_bf16_ops[0]);
	MPI_Op_create(peel_bf16_max, 1, &peel_bf16_ops[1]);
	MPI_Op_create(peel_bf16_min, 1, &peel_bf16_ops[2]);
}
static MPI_Op peel_op_for(int dt, int k) {
	if (dt == 5) return (k >= 0 && k < 3) ? peel_bf16_ops[k] : MPI_OP_NULL;
	switch (k) {
	case 0: return MPI_SUM;
	case 1: return MPI_MAX;
	case 2: return MPI_MIN;
	}
	return MPI_OP_NULL;
}
static int peel_allreduce(MPI_Comm c, void *in, void *out, int n, int dt, int op) {
	return MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, n, peel_dtype(dt), peel_op_for(dt, op), c);
}
static int peel_allgather(MPI_Comm c, void *in, void *out, int n, int dt) {
	return MPI_Allgather(in, n, peel_dtype(dt), out, n, peel_dtype(dt), c);
}
static int peel_bcast(MPI_Comm c, void *buf, int n, int dt, int root) {
	return MPI_Bcast(buf, n, peel_dtype(dt), root, c);
}
static int peel_reduce_scatter(MPI_Comm c, void *in, void *out, int n, int dt) {
	return MPI_Reduce_scatter_block(in, out, n, peel_dtype(dt), peel_op_for(dt, 0), c);
}
static int peel_alltoall(MPI_Comm c, void *in, void *out, int n, int dt) {
	return MPI_Alltoall(in, n, peel_dtype(dt), out, n, peel_dtype(dt), c);
}
static int peel_sendrecv(MPI_Comm c, void *in, int dst, void *out, int src, int n, int dt) {
	return MPI_Sendrecv(in, n, peel_dtype(dt), dst, 7, out, n, peel_dtype(dt), src, 7, c, MPI_STATUS_IGNORE);
}
static int peel_iallreduce(MPI_Comm c, void *in, void *out, int n, int dt, int op, MPI_Request *req) {
	return MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out, n, peel_dtype(dt), peel_op_for(dt, op), c, req);
}
static int peel_iallgather(MPI_Comm c, void *in, void *out, int n, int dt, MPI_Request *req) {
	return MPI_Iallgather(in, n, peel_dtype(dt), out, n, peel_dtype(dt), c, req);
}
static int peel_test(MPI_Request *req, int *done) { return MPI_Test(req, done, MPI_STATUS_IGNORE); }
// peel_fine_sleeps makes the calling thread's sleeps end within about
// 1 µs of their time (Linux's timer slack; 50 µs by default).
static void peel_fine_sleeps(void) {
#ifdef __linux__
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#endif
}
// peel_nap sleeps about 1 µs (10–20 µs in practice): the progress
// goroutine's pause between rounds of tests.
static void peel_nap(void) {
	struct timespec ts = {0, 1000};
	nanosleep(&ts, NULL);
}
static int peel_wait(MPI_Request *req) { return MPI_Wait(req, MPI_STATUS_IGNORE); }
static int peel_split(MPI_Comm c, int color, int key, MPI_Comm *out) { return MPI_Comm_split(c, color, key, out); }
// peel_local_size is the number of the job's processes on this machine
// (MPI_COMM_TYPE_SHARED).
static int peel_local_size(void) {
	MPI_Comm local;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) != MPI_SUCCESS) return -1;
	int n = -1;
	MPI_Comm_size(local, &n);
	MPI_Comm_free(&local);
	return n;
}
static int peel_rank(MPI_Comm c) { int r = -1; MPI_Comm_rank(c, &r); return r; }
static int peel_size(MPI_Comm c) { int s = -1; MPI_Comm_size(c, &s); return s; }
static void peel_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
static int peel_finalize(void) { return MPI_Finalize(); }
static void peel_errors_return(void) { MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); }
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"unsafe"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// MPI: the processes of an mpirun job as devices (build tag mpi). MPI is
// initialized with MPI_THREAD_MULTIPLE, so any goroutine may call a
// collective; each call holds no Go lock across MPI, and the calling
// goroutine is locked to its OS thread for the call (runtime.LockOSThread
// inside cgo calls is implicit: a cgo call runs on the goroutine's
// thread until it returns). Buffers passed to MPI are Go slices pinned for
// the call by cgo's rules (Go memory passed as a pointer argument is not
// moved while the call runs).

var (
	mpiOnce  sync.Once
	mpiWorld *mpiComm
)

// MPIEnabled reports whether this build has the MPI engine (the mpi tag).
const MPIEnabled = true

// World returns the communicator of every process of the job, initializing
// MPI on first use (MPI_Init_thread with MPI_THREAD_MULTIPLE). A program
// started without mpirun is a job of one process. It panics with
// *peel.Error when MPI cannot be initialized or does not provide
// MPI_THREAD_MULTIPLE.
func World() Communicator {
	mpiOnce.Do(func() {
		if C.peel_initialized() == 0 {
			var provided C.int
			if rc := C.peel_init(&provided); rc != 0 {
				meshErrorf("dist.World", "MPI_Init_thread failed (error %d)", int(rc))
			}
			if provided < C.MPI_THREAD_MULTIPLE {
				meshErrorf("dist.World", "MPI provides thread level %d, not MPI_THREAD_MULTIPLE", int(provided))
			}
			C.peel_errors_return()
		}
		C.peel_make_ops()
		w := C.peel_world()
		mpiWorld = &mpiComm{c: w, rank: int(C.peel_rank(w)), size: int(C.peel_size(w))}
		progress.thread = progressThread(int(C.peel_local_size()))
	})
	return mpiWorld
}

// Finalize ends MPI (MPI_Finalize); call it once, when the program is done
// with every communicator, as `defer dist.Finalize()` in main. Deferred
// so (called directly by the defer statement), it also ends the job when
// the program panics: MPI_Finalize would wait for the other processes,
// which wait in a collective for this one, so instead it prints the
// panic's value (a *peel.Error's message), this process's rank and the
// stack to stderr and aborts the job (Abort with exit code 2: every
// process ends, non-zero). In a job of one process the panic goes on as
// Go's own.
func Finalize() {
	if r := recover(); r != nil {
		finalizePanic(r, debug.Stack())
	}
	if C.peel_initialized() != 0 && C.peel_finalized() == 0 {
		C.peel_finalize()
	}
}

// finalizePanic is Finalize's answer to a panic: the job ends, unless it
// is of one process (or MPI never started), where the panic goes on.
func finalizePanic(r any, stack []byte) {
	if C.peel_initialized() == 0 || C.peel_finalized() != 0 || mpiWorld == nil || mpiWorld.size == 1 {
		panic(r)
	}
	msg := fmt.Sprint(r)
	if err, ok := r.(error); ok {
		msg = err.Error()
	}
	fmt.Fprintf(os.Stderr, "dist: rank %d of %d: panic: %s\n\n%s\n", mpiWorld.rank, mpiWorld.size, msg, stack)
	Abort(2)
}

// Abort ends every process of the job with the exit code (MPI_Abort): a
// process that fails must not leave the others waiting in a collective.
func Abort(code int) {
	fmt.Fprintf(os.Stderr, "dist: aborting the MPI job (exit code %d)\n", code)
	C.peel_abort(C.int(code))
}

// mpiComm is a Communicator over an MPI communicator.
type mpiComm struct {
	c          C.MPI_Comm
	rank, size int
	// Without a progress goroutine, the non-blocking reductions started
	// and not yet run, in start order; qmu serializes running them.
	qmu   sync.Mutex
	queue []*mpiRequest
}

func (m *mpiComm) Rank() int { return m.rank }
func (m *mpiComm) Size() int { return m.size }

// Split returns the communicator of the members with the same color,
// ranked by key (MPI_Comm_split): a 2-D mesh's per-axis communicators.
func (m *mpiComm) Split(color, key int) Communicator {
	k := call{c: cSplit}
	defer watch.end(watch.begin(m, k))
	m.agree(k)
	var out C.MPI_Comm
	if rc := C.peel_split(m.c, C.int(color), C.int(key), &out); rc != 0 {
		meshErrorf("dist.Split", "MPI_Comm_split failed (error %d)", int(rc))
	}
	return &mpiComm{c: out, rank: int(C.peel_rank(out)), size: int(C.peel_size(out))}
}

// hostBuf is a tensor's elements in a host slice MPI reads or writes,
// and the MPI datatype code. Where the tensor's backend keeps host slices
// (backend.HostViewer: the CPU backend) and the dtype is one MPI has,
// the slice is the tensor's own buffer, not a copy: an operand is read
// in place, and a result is written into a buffer from the backend's
// cache that becomes the result tensor. Half floats travel as f32
// (reduced in f32, rounded back once), bools as u8: those are copies.
type hostBuf struct {
	data  any
	ptr   unsafe.Pointer
	n     int
	dt    C.int
	orig  peel.DType
	shape []int
	keep  *peel.Tensor // the operand whose buffer data is
	whole bool         // data is all of keep's buffer and keep is no view: it may take the result
	// A result's buffer, when it is a backend buffer.
	be     backend.Backend
	buf    backend.Buffer
	cached bool
}

// mpiDType returns the MPI datatype code of dt, and false for a dtype
// that travels converted (half floats as f32, bool as u8).
func mpiDType(dt peel.DType) (C.int, bool) {
	switch dt {
	case peel.Float64:
		return 0, true
	case peel.Float32:
		return 1, true
	case peel.Int64:
		return 2, true
	case peel.Int32:
		return 3, true
	case peel.Uint8:
		return 4, true
	case peel.BFloat16:
		return 5, true
	}
	return 0, false
}

func toHost(x *peel.Tensor) hostBuf {
	h := hostBuf{orig: x.DType(), shape: x.Shape(), n: x.Size()}
	dt, native := mpiDType(x.DType())
	if native {
		arr, be := interp.ArrayOf(x)
		if hv, ok := be.(backend.HostViewer); ok && arr.IsContiguous() {
			if data := hv.HostView(arr.Buf); data != nil {
				h.data, h.dt, h.keep = subSlice(data, arr.Offset, h.n), dt, x
				h.whole = arr.Offset == 0 && arr.Buf.Len() == h.n && interp.ViewInfo(x) == nil
				h.ptr = slicePtr(h.data)
				return h
			}
		}
	}
	switch x.DType() {
	case peel.Float64:
		h.data, h.dt = x.Float64s(), 0
	case peel.Float32, peel.Float16, peel.BFloat16:
		h.data, h.dt = peel.AsType(x, peel.Float32).Float32s(), 1
	case peel.Int64:
		h.data, h.dt = x.Int64s(), 2
	case peel.Int32:
		h.data, h.dt = x.Int32s(), 3
	case peel.Uint8, peel.Bool:
		h.data, h.dt = peel.AsType(x, peel.Uint8).Uint8s(), 4
	default:
		interp.Panicf("MPI: dtype %v is not supported", x.DType())
	}
	h.ptr = slicePtr(h.data)
	return h
}

// subSlice returns data[off : off+n].
func subSlice(data any, off, n int) any {
	switch s := data.(type) {
	case []float64:
		return s[off : off+n]
	case []float32:
		return s[off : off+n]
	case []int64:
		return s[off : off+n]
	case []int32:
		return s[off : off+n]
	case []uint8:
		return s[off : off+n]
	case []backend.BF16:
		return s[off : off+n]
	}
	panic(fmt.Sprintf("dist: host slice %T", data))
}

// like returns a host buffer of n elements of h's MPI datatype for a
// result MPI writes in full: a buffer of the default backend where it
// can be (its elements unspecified until MPI writes them), else a new
// zeroed slice.
func (h hostBuf) like(n int) hostBuf {
	o := hostBuf{n: n, dt: h.dt, orig: h.orig}
	// (A bfloat16 operand read through a copy travels as f32: its result
	// is f32 too.)
	if dt, native := mpiDType(h.orig); native && dt == h.dt {
		be := interp.DefaultBackend()
		if hv, ok := be.(backend.HostViewer); ok {
			buf, cached := interp.AllocResult(be, dt2peel(dt), n)
			if data := hv.HostView(buf); data != nil {
				o.data, o.be, o.buf, o.cached = data, be, buf, cached
				o.ptr = slicePtr(o.data)
				return o
			}
		}
	}
	switch h.dt {
	case 0:
		o.data = make([]float64, n)
	case 1:
		o.data = make([]float32, n)
	case 2:
		o.data = make([]int64, n)
	case 3:
		o.data = make([]int32, n)
	case 4:
		o.data = make([]uint8, n)
	case 5:
		o.data = make([]backend.BF16, n)
	}
	o.ptr = slicePtr(o.data)
	return o
}

// dt2peel is the peel dtype of an MPI datatype code.
func dt2peel(dt C.int) peel.DType {
	return [...]peel.DType{peel.Float64, peel.Float32, peel.Int64, peel.Int32, peel.Uint8, peel.BFloat16}[dt]
}

// tensor returns h as a tensor of shape and h's original dtype.
func (h hostBuf) tensor(shape ...int) *peel.Tensor {
	if h.buf != nil {
		arr := backend.Array{Buf: h.buf, Shape: slices.Clone(shape)}
		if h.cached {
			return interp.NewResult(h.be, arr)
		}
		return interp.NewConcrete(h.be, arr)
	}
	var t *peel.Tensor
	switch s := h.data.(type) {
	case []float64:
		t = peel.FromFloat64s(s, shape...)
	case []float32:
		t = peel.FromFloat32s(s, shape...)
	case []int64:
		t = peel.FromInt64s(s, shape...)
	case []int32:
		t = peel.FromInt32s(s, shape...)
	case []uint8:
		t = peel.FromUint8s(s, shape...)
	case []backend.BF16:
		f := make([]float32, len(s))
		for i, v := range s {
			f[i] = v.Float32()
		}
		t = peel.FromBFloat16s(f, shape...) // exact: each value is a bfloat16
	}
	if t.DType() != h.orig {
		t = peel.AsType(t, h.orig)
	}
	return t
}

// pinHost pins the memory of the host buffers bufs (those with any) in
// p, for an MPI call given their bare pointers: the cgo pointer check
// reads the whole Go object such a pointer points into, and a small
// buffer of the CPU backend shares its object with the buffer's header,
// which points to the elements (see backend.HostViewer). The elements
// hold no pointers, so MPI may read and write them; pinned, they pass
// the check. A non-blocking collective keeps them pinned until it
// completes, as MPI uses them after the call returns.
func pinHost(p *runtime.Pinner, bufs ...hostBuf) {
	for _, h := range bufs {
		if h.ptr != nil {
			p.Pin(h.ptr)
		}
	}
}

func slicePtr(s any) unsafe.Pointer {
	switch s := s.(type) {
	case []float64:
		if len(s) > 0 {
			return unsafe.Pointer(&s[0])
		}
	case []float32:
		if len(s) > 0 {
			return unsafe.Pointer(&s[0])
		}
	case []int64:
		if len(s) > 0 {
			return unsafe.Pointer(&s[0])
		}
	case []int32:
		if len(s) > 0 {
			return unsafe.Pointer(&s[0])
		}
	case []uint8:
		if len(s) > 0 {
			return unsafe.Pointer(&s[0])
		}
	case []backend.BF16:
		if len(s) > 0 {
			return unsafe.Pointer(&s[0])
		}
	}
	return nil
}

func check(what string, rc C.int) {
	if rc != 0 {
		meshErrorf("dist (MPI)", "%s failed with MPI error %d", what, int(rc))
	}
}

// allReduceMaxInt64 is MPI_Allreduce (MPI_MAX) of int64s, for the
// guard (mpi_fault.go).
func (m *mpiComm) allReduceMaxInt64(in, out []int64) {
	check("MPI_Allreduce", C.peel_allreduce(m.c, unsafe.Pointer(&in[0]), unsafe.Pointer(&out[0]), C.int(len(in)), 2, C.int(Max)))
}

// allGatherInt64 is MPI_Allgather of int64s, for the check mode
// (mpi_fault.go).
func (m *mpiComm) allGatherInt64(in, out []int64) {
	check("MPI_Allgather", C.peel_allgather(m.c, unsafe.Pointer(&in[0]), unsafe.Pointer(&out[0]), C.int(len(in)), 2))
}

// Every collective below is timed by the watchdog (watch.begin and
// end) and agreed on by the members (agree) before it reaches MPI.

func (m *mpiComm) AllReduce(x *peel.Tensor, op ReduceOp) *peel.Tensor {
	k := callOf(cAllReduce, op, x)
	defer watch.end(watch.begin(m, k))
	m.agree(k)
	in := toHost(x)
	out := in.like(in.n)
	var pin runtime.Pinner
	defer pin.Unpin()
	pinHost(&pin, in, out)
	check("MPI_Allreduce", C.peel_allreduce(m.c, in.ptr, out.ptr, C.int(in.n), in.dt, C.int(op)))
	runtime.KeepAlive(in.keep)
	return out.tensor(in.shape...)
}

func (m *mpiComm) AllGather(x *peel.Tensor) *peel.Tensor {
	k := callOf(cAllGather, 0, x)
	defer watch.end(watch.begin(m, k))
	m.agree(k)
	in := toHost(x)
	out := in.like(in.n * m.size)
	var pin runtime.Pinner
	defer pin.Unpin()
	pinHost(&pin, in, out)
	check("MPI_Allgather", C.peel_allgather(m.c, in.ptr, out.ptr, C.int(in.n), in.dt))
	runtime.KeepAlive(in.keep)
	return out.tensor(append([]int{m.size}, in.shape...)...)
}

func (m *mpiComm) Broadcast(x *peel.Tensor, root int) *peel.Tensor {
	checkRoot(root, m.size)
	k := callOf(cBroadcast, 0, x)
	k.perm = [][2]int{{root, root}} // the check mode compares the roots
	defer watch.end(watch.begin(m, k))
	m.agree(k)
	in := toHost(x)
	var pin runtime.Pinner
	defer pin.Unpin()
	if m.rank == root {
		// MPI_Bcast only reads the root's buffer.
		pinHost(&pin, in)
		check("MPI_Bcast", C.peel_bcast(m.c, in.ptr, C.int(in.n), in.dt, C.int(root)))
		runtime.KeepAlive(in.keep)
		return peel.Clone(x)
	}
	out := in.like(in.n)
	pinHost(&pin, out)
	check("MPI_Bcast", C.peel_bcast(m.c, out.ptr, C.int(in.n), in.dt, C.int(root)))
	runtime.KeepAlive(in.keep)
	return out.tensor(in.shape...)
}

func (m *mpiComm) ReduceScatter(x *peel.Tensor) *peel.Tensor {
	k := callOf(cReduceScatter, 0, x)
	defer watch.end(watch.begin(m, k))
	m.agree(k)
	if x.Rank() == 0 || x.Shape()[0] != m.size {
		interp.Panicf("ReduceScatter: the operand %s needs a leading axis of %d blocks", x.TypeString(), m.size)
	}
	in := toHost(x)
	out := in.like(in.n / m.size)
	var pin runtime.Pinner
	defer pin.Unpin()
	pinHost(&pin, in, out)
	check("MPI_Reduce_scatter_block", C.peel_reduce_scatter(m.c, in.ptr, out.ptr, C.int(in.n/m.size), in.dt))
	runtime.KeepAlive(in.keep)
	return out.tensor(in.shape[1:]...)
}

func (m *mpiComm) AllToAll(x *peel.Tensor) *peel.Tensor {
	k := callOf(cAllToAll, 0, x)
	defer watch.end(watch.begin(m, k))
	m.agree(k)
	if x.Rank() == 0 || x.Shape()[0] != m.size {
		interp.Panicf("AllToAll: the operand %s needs a leading axis of %d blocks", x.TypeString(), m.size)
	}
	in := toHost(x)
	out := in.like(in.n)
	var pin runtime.Pinner
	defer pin.Unpin()
	pinHost(&pin, in, out)
	check("MPI_Alltoall", C.peel_alltoall(m.c, in.ptr, out.ptr, C.int(in.n/m.size), in.dt))
	runtime.KeepAlive(in.keep)
	return out.tensor(in.shape...)
}

func (m *mpiComm) Permute(x *peel.Tensor, perm [][2]int) *peel.Tensor {
	k := callOf(cPermute, 0, x)
	k.perm = perm
	defer watch.end(watch.begin(m, k))
	m.agree(k)
	in := toHost(x)
	out := in.like(in.n)
	dst, src := C.int(C.MPI_PROC_NULL), C.int(C.MPI_PROC_NULL)
	for _, p := range perm {
		if p[0] == m.rank {
			dst = C.int(p[1])
		}
		if p[1] == m.rank {
			src = C.int(p[0])
		}
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	pinHost(&pin, in, out)
	check("MPI_Sendrecv", C.peel_sendrecv(m.c, in.ptr, dst, out.ptr, src, C.int(in.n), in.dt))
	runtime.KeepAlive(in.keep)
	if src == C.MPI_PROC_NULL { // nothing received: zeros, as the other engines give
		return peel.ZerosLike(x)
	}
	return out.tensor(in.shape...)
}

// IAllReduce starts MPI_Iallreduce on x's elements and returns its
// request. The operand and result buffers are pinned (runtime.Pinner)
// until the request completes, as MPI reads and writes them after the
// call returns. Open MPI advances a non-blocking collective only inside
// MPI calls, so a progress goroutine tests the pending requests
// (MPI_Test) while they are outstanding, sleeping between tests, and the
// collective proceeds while the caller computes (torch's gloo backend
// does the same with its own threads).
func (m *mpiComm) IAllReduce(x *peel.Tensor, op ReduceOp) Request {
	return m.iallreduce(x, op, false)
}

// IAllReduceInPlace is IAllReduce that reduces in x's memory
// (MPI_IN_PLACE) when x is a whole tensor of the CPU backend and no
// view: x is then the result.
func (m *mpiComm) IAllReduceInPlace(x *peel.Tensor, op ReduceOp) Request {
	return m.iallreduce(x, op, true)
}

// overlapping reports whether started collectives progress while the
// caller computes (Overlapping): with the progress goroutine.
func (m *mpiComm) overlapping() bool { return progress.thread }

// IAllGather starts MPI_Iallgather on x's elements and returns its
// request, advanced as IAllReduce's is.
func (m *mpiComm) IAllGather(x *peel.Tensor) Request {
	return m.istart(callOf(cIAllGather, 0, x), x, false)
}

func (m *mpiComm) iallreduce(x *peel.Tensor, op ReduceOp, donated bool) Request {
	return m.istart(callOf(cIAllReduce, op, x), x, donated)
}

// istart starts the non-blocking collective k (IAllReduce or
// IAllGather) on x.
func (m *mpiComm) istart(k call, x *peel.Tensor, donated bool) Request {
	in := toHost(x)
	r := &mpiRequest{m: m, k: k, in: in, done: make(chan struct{})}
	switch {
	case k.c == cIAllGather:
		r.out = in.like(in.n * m.size)
		r.shape = append([]int{m.size}, in.shape...)
	case donated && in.whole:
		// The caller gave x up: reduce in place (MPI_IN_PLACE), and x is
		// the result. No buffer to allocate, and none that is cold.
		r.out, r.result = in, x
	default:
		r.out = in.like(in.n)
	}
	if r.shape == nil {
		r.shape = in.shape
	}
	if !progress.thread {
		// No core to spare for progress: the collective is deferred to
		// its Wait, or to the next collective on m, whichever comes first
		// (in start order, so every process runs the same calls in the
		// same order), and runs as the blocking collective
		// (MPI_Allreduce is faster than MPI_Iallreduce for large
		// buckets: 4.9 against 7.3 ms for 16 MB at 2 processes here).
		// Starting costs nothing, and no process waits for the others at
		// the start.
		m.qmu.Lock()
		m.queue = append(m.queue, r)
		m.qmu.Unlock()
		return r
	}
	defer watch.end(watch.begin(m, k))
	m.agree(k)
	pinHost(&r.pin, in, r.out)
	r.req = (*C.MPI_Request)(C.malloc(C.size_t(unsafe.Sizeof(C.MPI_Request(nil)))))
	if k.c == cIAllGather {
		check("MPI_Iallgather", C.peel_iallgather(m.c, in.ptr, r.out.ptr, C.int(in.n), in.dt, r.req))
	} else {
		check("MPI_Iallreduce", C.peel_iallreduce(m.c, in.ptr, r.out.ptr, C.int(in.n), in.dt, C.int(k.op), r.req))
	}
	progress.add(r)
	return r
}

// mpiRequest is a started non-blocking collective.
type mpiRequest struct {
	m       *mpiComm
	k       call // the collective started, for the guard and the watchdog
	in, out hostBuf
	shape   []int // the result's
	pin     runtime.Pinner
	req     *C.MPI_Request // C memory: MPI keeps its handle there
	rc      C.int
	err     any           // a deferred request's failure, re-panicked by Wait
	done    chan struct{} // closed when the request has completed
	once    sync.Once
	result  *peel.Tensor // the result, made once
}

// flush runs m's deferred reductions in start order, through upto (all
// of them when upto is nil). qmu is held across the MPI calls: they must
// run in start order even when several goroutines flush.
func (m *mpiComm) flush(upto *mpiRequest) {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	for len(m.queue) > 0 {
		r := m.queue[0]
		m.queue = m.queue[1:]
		r.run()
		if r == upto {
			return
		}
	}
}

// run performs a deferred reduction: the guard, then MPI_Allreduce.
func (r *mpiRequest) run() {
	defer close(r.done)
	defer watch.end(watch.begin(r.m, r.k))
	defer func() {
		if e := recover(); e != nil { // a failed guard: the waiter panics
			r.err = e
		}
	}()
	r.m.agreeNow(r.k)
	var pin runtime.Pinner
	defer pin.Unpin()
	pinHost(&pin, r.in, r.out)
	if r.k.c == cIAllGather {
		r.rc = C.peel_allgather(r.m.c, r.in.ptr, r.out.ptr, C.int(r.in.n), r.in.dt)
	} else {
		r.rc = C.peel_allreduce(r.m.c, r.in.ptr, r.out.ptr, C.int(r.in.n), r.in.dt, C.int(r.k.op))
	}
	runtime.KeepAlive(r.in.keep)
}

// Wait returns the result once the collective has completed; a second
// Wait returns the same tensor. It panics with *peel.Error when the
// collective failed.
func (r *mpiRequest) Wait() *peel.Tensor {
	k := r.k
	k.wait = true
	defer watch.end(watch.begin(r.m, k))
	// The waiter has nothing else to do: it takes the request over from
	// the progress goroutine and completes it itself (MPI_Wait), without
	// the goroutine's polling delay.
	if r.req == nil { // deferred (no progress goroutine): run it, and those started before it
		select {
		case <-r.done:
		default:
			r.m.flush(r)
		}
	} else if progress.take(r) {
		r.complete(C.peel_wait(r.req))
	}
	<-r.done
	if r.err != nil {
		panic(r.err)
	}
	if r.k.c == cIAllGather {
		check("MPI_Iallgather", r.rc)
	} else {
		check("MPI_Iallreduce", r.rc)
	}
	r.once.Do(func() {
		if r.result == nil {
			r.result = r.out.tensor(r.shape...)
		}
	})
	return r.result
}

// progress drives the pending requests of the process.
var progress = &progressLoop{}

// progressLoop is the goroutine that tests the pending requests, on an
// OS thread of its own whose sleeps are fine-grained (a 1 µs timer slack:
// Go's timers and the default slack sleep 0.1–1 ms on a virtual
// machine, which would let a bucket's reduction stall between its
// rounds). Its mutex guards pending and serializes every MPI_Test and
// the hand-over of a request to Wait: MPI forbids testing one request
// from two threads at once.
type progressLoop struct {
	mu      sync.Mutex
	pending []*mpiRequest
	running bool
	// thread: a goroutine advances the requests; otherwise a request
	// completes when it starts (MPI_Allreduce).
	thread bool
}

// progressThread reports whether non-blocking requests get a progress
// goroutine (MPI_Iallreduce, advanced while the caller computes) or
// complete when they start (MPI_Allreduce): PEEL_MPI_PROGRESS=thread or
// =wait says; by default a goroutine when this machine has a core beyond
// one per local process. Shared-memory communication
// is the CPU's own work, so on a machine whose cores all compute (two
// processes on two cores) a thread polling beside them slows the
// computation by more than it overlaps (measured: a data-parallel step
// 2–5 ms slower in 30), while with a spare core (or a network that moves
// the data by itself) it lets a reduction run during the backward pass.
func progressThread(localProcs int) bool {
	switch v := os.Getenv("PEEL_MPI_PROGRESS"); v {
	case "thread":
		return true
	case "wait":
		return false
	case "":
	default:
		meshErrorf("dist", "PEEL_MPI_PROGRESS=%q: want thread or wait", v)
	}
	return localProcs > 0 && runtime.NumCPU() > localProcs
}

func (p *progressLoop) add(r *mpiRequest) {
	p.mu.Lock()
	p.pending = append(p.pending, r)
	start := !p.running
	p.running = true
	p.mu.Unlock()
	if start {
		go p.loop()
	}
}

// testLocked tests every pending request once (MPI_Test) and completes
// those done; p.mu is held.
func (p *progressLoop) testLocked() {
	p.pending = slices.DeleteFunc(p.pending, func(r *mpiRequest) bool {
		var flag C.int
		rc := C.peel_test(r.req, &flag)
		if rc == 0 && flag == 0 {
			return false
		}
		r.complete(rc)
		return true
	})
}

// loop tests the pending requests about every 15 µs until none is left,
// then exits (the next add starts it again). A request completes when
// MPI_Test says so or fails.
func (p *progressLoop) loop() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.peel_fine_sleeps()
	for {
		p.mu.Lock()
		p.testLocked()
		if len(p.pending) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		C.peel_nap()
	}
}

// take removes r from the pending requests for its waiter to complete
// it (MPI_Wait), and reports whether it did: false when r has completed
// or another waiter took it.
func (p *progressLoop) take(r *mpiRequest) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.pending)
	p.pending = slices.DeleteFunc(p.pending, func(q *mpiRequest) bool { return q == r })
	return len(p.pending) < n
}

// complete records the request's outcome, frees what MPI held, and
// releases its waiters.
func (r *mpiRequest) complete(rc C.int) {
	r.rc = rc
	r.pin.Unpin()
	C.free(unsafe.Pointer(r.req))
	close(r.done)
}

// Barrier returns when every member has called it. With more than one
// member, the members' agreement on the call (agree: an all-reduce or,
// in check mode, an all-gather) is itself the barrier.
func (m *mpiComm) Barrier() {
	k := call{c: cBarrier}
	defer watch.end(watch.begin(m, k))
	if m.size == 1 {
		return
	}
	m.agree(k)
}
