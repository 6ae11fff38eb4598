/* qwengpu prelude, integer intrinsics: CUDA's 32-bit integer functions, declared as
 * CUDA's headers declare them (sm_20+ device functions; clang -nocudainc brings none).
 *
 * Each maps to the PTX instruction nvcc uses for it (popc, clz, brev, prmt, mul.hi,
 * sad), which the host lowers to routines of the machine's own instructions
 * (host/intrinsics.py, host/division.py): the model computes every result.
 * __clz(0) is 32 as on a GPU (clz.b32 of 0): the explicit test keeps LLVM from
 * treating __builtin_clz(0) as undefined and folds into one clz.b32.
 * The 64-bit forms (__popcll, __clzll, __brevll, __mul64hi ...) are in
 * prelude_wide64.h, written on these over the two words of a 64-bit value.
 */
#ifndef QWENGPU_PRELUDE_INTEGER_H
#define QWENGPU_PRELUDE_INTEGER_H
#ifndef __NVCC__

#define __qwengpu_int_fn static __device__ __forceinline__ __qwengpu_nodebug

__qwengpu_int_fn int __popc(unsigned int x) { return __builtin_popcount(x); }
__qwengpu_int_fn int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
__qwengpu_int_fn int __ffs(int x) { return __builtin_ffs(x); }
__qwengpu_int_fn unsigned int __brev(unsigned int x) { return __builtin_bitreverse32(x); }
__qwengpu_int_fn unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  return (unsigned int)__nvvm_prmt((int)x, (int)y, (int)s);
}
__qwengpu_int_fn int __mulhi(int x, int y) { return __nvvm_mulhi_i(x, y); }
__qwengpu_int_fn unsigned int __umulhi(unsigned int x, unsigned int y) { return __nvvm_mulhi_ui(x, y); }
__qwengpu_int_fn unsigned int __sad(int x, int y, unsigned int z) {
  return (unsigned int)__nvvm_sad_i(x, y, (int)z);
}
__qwengpu_int_fn unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) {
  return __nvvm_sad_ui(x, y, z);
}
/* averages without overflow: floor((x + y) / 2) and its rounded-up form, as CUDA defines them */
__qwengpu_int_fn int __hadd(int x, int y) { return (x & y) + ((x ^ y) >> 1); }
__qwengpu_int_fn int __rhadd(int x, int y) { return (x | y) - ((x ^ y) >> 1); }
__qwengpu_int_fn unsigned int __uhadd(unsigned int x, unsigned int y) { return (x & y) + ((x ^ y) >> 1); }
__qwengpu_int_fn unsigned int __urhadd(unsigned int x, unsigned int y) { return (x | y) - ((x ^ y) >> 1); }
/* the low 32 bits of the product of the low 24 bits (the top 8 bits ignored) */
__qwengpu_int_fn int __mul24(int x, int y) { return ((x << 8) >> 8) * ((y << 8) >> 8); }
__qwengpu_int_fn unsigned int __umul24(unsigned int x, unsigned int y) { return (x & 0xffffffu) * (y & 0xffffffu); }
__qwengpu_int_fn unsigned int umin(unsigned int x, unsigned int y) { return x < y ? x : y; }
__qwengpu_int_fn unsigned int umax(unsigned int x, unsigned int y) { return x > y ? x : y; }

#undef __qwengpu_int_fn
#endif /* __NVCC__ */
#endif /* QWENGPU_PRELUDE_INTEGER_H */
