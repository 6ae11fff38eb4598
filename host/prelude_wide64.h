/* qwengpu prelude, 64-bit integer part (included by prelude.h for clang only).
 *
 * The type names CUDA code uses for 64-bit values, as <cstddef>/<cstdint> declare them on
 * an LP64 host (the same types, so a program that includes those headers too compiles),
 * and CUDA's 64-bit integer functions, declared as CUDA's headers declare them. The
 * machine is 32-bit: host/wide64.py lowers 64-bit values to pairs of words, and each
 * function here is written on the 32-bit intrinsics of prelude_integer.h (whose routines
 * the model runs), so no 64-bit bit instruction (popc.b64, clz.b64 ...) reaches the host.
 */
#ifndef QWENGPU_PRELUDE_WIDE64_H
#define QWENGPU_PRELUDE_WIDE64_H
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT32_TYPE__ uint32_t;

#define __qwengpu_wide_fn static __device__ __forceinline__ __qwengpu_nodebug
typedef unsigned long long __qwengpu_u64;

__qwengpu_wide_fn unsigned __qwengpu_lo(__qwengpu_u64 x) { return (unsigned)x; }
__qwengpu_wide_fn unsigned __qwengpu_hi(__qwengpu_u64 x) { return (unsigned)(x >> 32); }

__qwengpu_wide_fn long long llmin(long long a, long long b) { return a < b ? a : b; }
__qwengpu_wide_fn long long llmax(long long a, long long b) { return a > b ? a : b; }
__qwengpu_wide_fn unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
__qwengpu_wide_fn unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
__qwengpu_wide_fn long long min(long long a, long long b) { return llmin(a, b); }
__qwengpu_wide_fn long long max(long long a, long long b) { return llmax(a, b); }
__qwengpu_wide_fn unsigned long long min(unsigned long long a, unsigned long long b) { return ullmin(a, b); }
__qwengpu_wide_fn unsigned long long max(unsigned long long a, unsigned long long b) { return ullmax(a, b); }
__qwengpu_wide_fn long min(long a, long b) { return a < b ? a : b; }
__qwengpu_wide_fn long max(long a, long b) { return a > b ? a : b; }
__qwengpu_wide_fn unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
__qwengpu_wide_fn unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
__qwengpu_wide_fn long long llabs(long long a) { return a < 0 ? -a : a; }

__qwengpu_wide_fn int __popcll(unsigned long long x) { return __popc(__qwengpu_lo(x)) + __popc(__qwengpu_hi(x)); }
__qwengpu_wide_fn int __clzll(long long x) {
  return __qwengpu_hi(x) ? __clz((int)__qwengpu_hi(x)) : 32 + __clz((int)__qwengpu_lo(x));
}
__qwengpu_wide_fn int __ffsll(long long x) {
  return __qwengpu_lo(x) ? __ffs((int)__qwengpu_lo(x)) : (__qwengpu_hi(x) ? 32 + __ffs((int)__qwengpu_hi(x)) : 0);
}
/* the empty asm keeps LLVM from merging the two 32-bit reversals into one brev.b64 */
__qwengpu_wide_fn unsigned long long __brevll(unsigned long long x) {
  unsigned high = __brev(__qwengpu_lo(x));
  asm("" : "+r"(high));
  return (__qwengpu_u64)high << 32 | __brev(__qwengpu_hi(x));
}
/* the high 64 bits of the 128-bit product, from four 32 x 32 -> 64-bit products */
__qwengpu_wide_fn unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  __qwengpu_u64 ll = (__qwengpu_u64)__qwengpu_lo(x) * __qwengpu_lo(y);
  __qwengpu_u64 lh = (__qwengpu_u64)__qwengpu_lo(x) * __qwengpu_hi(y);
  __qwengpu_u64 hl = (__qwengpu_u64)__qwengpu_hi(x) * __qwengpu_lo(y);
  __qwengpu_u64 hh = (__qwengpu_u64)__qwengpu_hi(x) * __qwengpu_hi(y);
  __qwengpu_u64 mid = (ll >> 32) + __qwengpu_lo(lh) + __qwengpu_lo(hl);
  return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}
__qwengpu_wide_fn long long __mul64hi(long long x, long long y) {
  __qwengpu_u64 h = __umul64hi((__qwengpu_u64)x, (__qwengpu_u64)y);
  return (long long)(h - (x < 0 ? (__qwengpu_u64)y : 0) - (y < 0 ? (__qwengpu_u64)x : 0));
}

/* __shfl_*_sync of a 64-bit value, as CUDA's headers overload them: its two words shuffled
   one after the other by the 32-lane routine of prelude_warps.h, with its mask and width
   checks (QWENGPU_FULL_MASK_ONLY, QWENGPU_WIDTH_POWER_OF_TWO) at the user's call. */
#define QWENGPU_SHFL64(name, mode, T)                                                            \
  __qwengpu_wide_fn T name(unsigned mask, T var, int b, int width = QWENGPU_WARP_SIZE)           \
      QWENGPU_FULL_MASK_ONLY QWENGPU_WIDTH_POWER_OF_TWO {                                        \
    unsigned lo = (unsigned)__qwengpu_shuffle(mode, (int)__qwengpu_lo(var), (unsigned)b, width);  \
    unsigned hi = (unsigned)__qwengpu_shuffle(mode, (int)__qwengpu_hi(var), (unsigned)b, width);  \
    return (T)((__qwengpu_u64)hi << 32 | lo);                                                    \
  }
#define QWENGPU_SHFL64_ALL(name, mode)                                                           \
  QWENGPU_SHFL64(name, mode, long long) QWENGPU_SHFL64(name, mode, unsigned long long)          \
  QWENGPU_SHFL64(name, mode, long) QWENGPU_SHFL64(name, mode, unsigned long)
QWENGPU_SHFL64_ALL(__shfl_sync, 0)
QWENGPU_SHFL64_ALL(__shfl_up_sync, 1)
QWENGPU_SHFL64_ALL(__shfl_down_sync, 2)
QWENGPU_SHFL64_ALL(__shfl_xor_sync, 3)
#undef QWENGPU_SHFL64_ALL
#undef QWENGPU_SHFL64
#undef QWENGPU_FULL_MASK_ONLY
#undef QWENGPU_WIDTH_POWER_OF_TWO
#endif
