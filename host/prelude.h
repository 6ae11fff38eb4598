/* qwengpu prelude: force-included (-include) into every kernel we compile.
 *
 * Our SIMT machine has 4-lane warps, so the CUDA names that depend on the warp
 * size (warpSize, the width default of the shuffles, the shfl "c" operand) are
 * defined here for warpSize == 4. Everything else is the ordinary CUDA spelling,
 * so a plain kernel compiles with no #include:
 *
 *   clang -x cuda --cuda-device-only --cuda-gpu-arch=sm_75 -nocudainc -nocudalib
 *         -include prelude.h ...
 *
 * The shfl "c" operand packs (segmask << 8) | clamp with 2-bit lane fields
 * (docs/MACHINE.md): idx/down/bfly use ((4 - width) << 8) | 3, up uses
 * (4 - width) << 8, exactly as CUDA does with 32 and 0x1f.
 *
 * Under nvcc (which brings its own headers, warpSize 32 and its own shuffles) the
 * same names are redirected by macros to the 4-lane versions below.
 */
#ifndef QWENGPU_PRELUDE_H
#define QWENGPU_PRELUDE_H

#define QWENGPU_WARP_SIZE 4
#define QWENGPU_SHFL_C(width) (((QWENGPU_WARP_SIZE - (width)) << 8) | (QWENGPU_WARP_SIZE - 1))
#define QWENGPU_SHFL_C_UP(width) ((QWENGPU_WARP_SIZE - (width)) << 8)

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

#define QWENGPU_SHFL(name, builtin, cexpr)                                          \
  static __device__ __forceinline__ __qwengpu_nodebug int name(unsigned mask, int var, int b,         \
                                              int width = QWENGPU_WARP_SIZE) {      \
    return builtin(mask, var, b, cexpr(width));                                     \
  }                                                                                 \
  static __device__ __forceinline__ __qwengpu_nodebug unsigned name(unsigned mask, unsigned var,      \
                                                   int b,                           \
                                                   int width = QWENGPU_WARP_SIZE) { \
    return (unsigned)builtin(mask, (int)var, b, cexpr(width));                      \
  }
QWENGPU_SHFL(__shfl_sync, __nvvm_shfl_sync_idx_i32, QWENGPU_SHFL_C)
QWENGPU_SHFL(__shfl_up_sync, __nvvm_shfl_sync_up_i32, QWENGPU_SHFL_C_UP)
QWENGPU_SHFL(__shfl_down_sync, __nvvm_shfl_sync_down_i32, QWENGPU_SHFL_C)
QWENGPU_SHFL(__shfl_xor_sync, __nvvm_shfl_sync_bfly_i32, QWENGPU_SHFL_C)
#undef QWENGPU_SHFL

/* clang 14 has no __nvvm_activemask builtin; the PTX instruction needs ptx62. */
static __device__ __forceinline__ __qwengpu_nodebug unsigned __activemask(void) {
  unsigned m;
  asm volatile("activemask.b32 %0;" : "=r"(m));
  return m;
}

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
/* ---- nvcc: its headers are already in; redirect the warp-size names ---------- */

extern __device__ __device_builtin__ unsigned __nvvm_shfl_idx_sync(unsigned, unsigned, unsigned, unsigned);
extern __device__ __device_builtin__ unsigned __nvvm_shfl_up_sync(unsigned, unsigned, unsigned, unsigned);
extern __device__ __device_builtin__ unsigned __nvvm_shfl_down_sync(unsigned, unsigned, unsigned, unsigned);
extern __device__ __device_builtin__ unsigned __nvvm_shfl_bfly_sync(unsigned, unsigned, unsigned, unsigned);

#define QWENGPU_SHFL(name, builtin, cexpr)                                               \
  static __device__ __forceinline__ int name(unsigned mask, int var, int b,              \
                                              int width = QWENGPU_WARP_SIZE) {           \
    return (int)builtin(mask, (unsigned)var, (unsigned)b, (unsigned)cexpr(width));       \
  }                                                                                      \
  static __device__ __forceinline__ unsigned name(unsigned mask, unsigned var, int b,    \
                                                   int width = QWENGPU_WARP_SIZE) {      \
    return builtin(mask, var, (unsigned)b, (unsigned)cexpr(width));                      \
  }
QWENGPU_SHFL(__qwengpu_shfl_sync, __nvvm_shfl_idx_sync, QWENGPU_SHFL_C)
QWENGPU_SHFL(__qwengpu_shfl_up_sync, __nvvm_shfl_up_sync, QWENGPU_SHFL_C_UP)
QWENGPU_SHFL(__qwengpu_shfl_down_sync, __nvvm_shfl_down_sync, QWENGPU_SHFL_C)
QWENGPU_SHFL(__qwengpu_shfl_xor_sync, __nvvm_shfl_bfly_sync, QWENGPU_SHFL_C)
#undef QWENGPU_SHFL

#define __shfl_sync __qwengpu_shfl_sync
#define __shfl_up_sync __qwengpu_shfl_up_sync
#define __shfl_down_sync __qwengpu_shfl_down_sync
#define __shfl_xor_sync __qwengpu_shfl_xor_sync
#undef warpSize
#define warpSize QWENGPU_WARP_SIZE

#endif /* __NVCC__ */
#include "prelude_atomics.h"
#include "prelude_integer.h"
#endif /* QWENGPU_PRELUDE_H */
