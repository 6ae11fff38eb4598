/* qwengpu prelude: force-included (-include) into every kernel we compile.
 *
 * To a kernel a warp is what it is on every NVIDIA GPU: 32 lanes, warpSize == 32.
 * A thread block here holds at most 32 threads (machine.max_block_dim), so the CUDA
 * warp is the whole thread block and a lane is the thread's linear index in it
 * (%laneid, which the host reads as the machine's linear thread index).
 *
 * Inside the machine a warp is 4 lanes with a 4-lane hardware shuffle. The 32-wide
 * warp operations below are therefore routines of ordinary machine instructions: a
 * shuffle publishes each lane's value in a scratch word of shared memory indexed by
 * its lane, waits at a barrier, reads its source lane's word (CUDA's rules for
 * idx/up/down/xor with a width), and waits again before the scratch is reused; a vote
 * adds distinct lane bits into a shared word. Only where a 4-lane hardware shuffle
 * provably gives the 32-lane result (an xor by a constant below 4, or any shuffle
 * inside segments of at most 4 lanes) is it used instead.
 *
 *   clang -x cuda --cuda-device-only --cuda-gpu-arch=sm_75 -nocudainc -nocudalib
 *         -include prelude.h ...
 *
 * The member mask must be the constant 0xffffffff and a constant width a power of
 * two up to 32: anything else is refused when compiled, at the user's line
 * (diagnose_if), because a barrier cannot wait for part of a thread block.
 *
 * Under nvcc (which brings its own headers) the GPU's own warp functions are used; the
 * host refuses their 32-lane shfl.sync (host/warp_ops.py), so warp kernels take clang.
 */
#ifndef QWENGPU_PRELUDE_H
#define QWENGPU_PRELUDE_H

#define QWENGPU_WARP_SIZE 32

#ifndef __NVCC__
/* ---- clang, -nocudainc: we provide the CUDA basics ourselves ---------------- */

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))

/* The prelude's functions carry no line tables of their own: inlined, their code
   takes the line of the user's call (`atomicAdd(out, 0)`), which errors then name. */
#define __qwengpu_nodebug __attribute__((nodebug))

/* threadIdx, blockIdx, blockDim, gridDim come from clang's own header; it also
   declares warpSize = 32, which we rename out of the way. */
#define warpSize __qwengpu_clang_warpSize_unused
/* Its getters (`threadIdx.y` is a call of __fetch_builtin_y) are made nodebug like the
   prelude's own functions, so their PTX carries the user's line, not the header's. */
#define always_inline always_inline, nodebug
#include <__clang_cuda_builtin_vars.h>
#undef always_inline
#undef warpSize
static constexpr int warpSize = QWENGPU_WARP_SIZE;

/* __syncthreads(): bar.sync 0 as volatile asm with a memory clobber. clang 14's own
   builtin does not stop LLVM from keeping kernel-local __shared__ values in
   registers across the barrier, which breaks exchanges between threads. */
static __device__ __forceinline__ __qwengpu_nodebug void __qwengpu_syncthreads(void) {
  asm volatile("bar.sync 0;" ::: "memory");
}
#define __syncthreads() __qwengpu_syncthreads()

static __device__ __forceinline__ __qwengpu_nodebug int atomicAdd(int *p, int v) {
  return __nvvm_atom_add_gen_i(p, v);
}
static __device__ __forceinline__ __qwengpu_nodebug unsigned atomicAdd(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_add_gen_i((int *)p, (int)v);
}

#include "prelude_warps.h"

static __device__ __forceinline__ __qwengpu_nodebug int abs(int a) { return a < 0 ? -a : a; }

/* min/max as CUDA's headers have them: mixed signedness compares unsigned. */
static __device__ __forceinline__ __qwengpu_nodebug int min(int a, int b) { return a < b ? a : b; }
static __device__ __forceinline__ __qwengpu_nodebug int max(int a, int b) { return a > b ? a : b; }
static __device__ __forceinline__ __qwengpu_nodebug unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static __device__ __forceinline__ __qwengpu_nodebug unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static __device__ __forceinline__ __qwengpu_nodebug unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static __device__ __forceinline__ __qwengpu_nodebug unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static __device__ __forceinline__ __qwengpu_nodebug unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static __device__ __forceinline__ __qwengpu_nodebug unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }

#else
/* ---- nvcc: its headers are already in, with the GPU's own 32-lane warp functions;
   warpSize as the constant it is (nvcc's PTX would read the WARP_SZ register) ------ */
#undef warpSize
#define warpSize QWENGPU_WARP_SIZE

#endif /* __NVCC__ */
#include "prelude_atomics.h"
#include "prelude_integer.h"
#include "prelude_float.h"
#include "prelude_vector.h"
#ifndef __NVCC__
#include "prelude_wide64.h"
#endif
#endif /* QWENGPU_PRELUDE_H */
