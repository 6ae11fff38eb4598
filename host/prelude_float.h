/* qwengpu prelude, float intrinsics: CUDA's float32 functions, declared as CUDA's
 * headers declare them (clang -nocudainc brings none, and there is no libdevice).
 *
 * Each maps to a clang builtin that the NVPTX back end emits as plain PTX (mov.b32,
 * sqrt.rn.f32, min.f32, cvt.rmi.f32.f32, cvt.rzi.s32.f32, fma.rn.f32 ...), which the
 * host lowers to routines of the machine's integer instructions (host/float_convert.py,
 * host/translate_float_arith.py): the model computes every result, bit for bit as a GPU
 * does without fast math (sqrtf is sqrt.rn.f32, correctly rounded).
 * The float overloads CUDA gives C++ (sqrt(float), floor(float), fmin(float, float) ...)
 * are here too; the double ones are not (the machine's floats are binary32).
 * Functions with no instruction of their own (expf, logf, sinf, powf ...) would come from
 * libdevice; they are declared only to be refused at the call, saying so.
 */
#ifndef QWENGPU_PRELUDE_FLOAT_H
#define QWENGPU_PRELUDE_FLOAT_H
#ifndef __NVCC__

#define __qwengpu_float_fn static __device__ __forceinline__ __qwengpu_nodebug

/* bit casts: the register's 32 bits as they are */
__qwengpu_float_fn float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
__qwengpu_float_fn int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
__qwengpu_float_fn float __uint_as_float(unsigned int x) { return __builtin_bit_cast(float, x); }
__qwengpu_float_fn unsigned int __float_as_uint(float x) { return __builtin_bit_cast(unsigned int, x); }

/* one PTX instruction each */
__qwengpu_float_fn float sqrtf(float x) { return __builtin_sqrtf(x); }
__qwengpu_float_fn float fabsf(float x) { return __builtin_fabsf(x); }
__qwengpu_float_fn float fminf(float a, float b) { return __builtin_fminf(a, b); }
__qwengpu_float_fn float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__qwengpu_float_fn float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
__qwengpu_float_fn float floorf(float x) { return __builtin_floorf(x); }
__qwengpu_float_fn float ceilf(float x) { return __builtin_ceilf(x); }
__qwengpu_float_fn float truncf(float x) { return __builtin_truncf(x); }
__qwengpu_float_fn float rintf(float x) { return __builtin_rintf(x); }
__qwengpu_float_fn float nearbyintf(float x) { return __builtin_rintf(x); }
__qwengpu_float_fn float roundf(float x) { return __builtin_roundf(x); } /* half away from zero */
__qwengpu_float_fn float copysignf(float a, float b) { return __builtin_copysignf(a, b); }
__qwengpu_float_fn float fdimf(float a, float b) { return a > b ? a - b : (a == a && b == b ? 0.0f : a + b); }
__qwengpu_float_fn float __saturatef(float x) { return __builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f); }
__qwengpu_float_fn int __isnanf(float x) { return __builtin_isnan(x); }
__qwengpu_float_fn int __isinff(float x) { return __builtin_isinf(x); }
__qwengpu_float_fn int __finitef(float x) { return __builtin_isfinite(x); }
__qwengpu_float_fn int __signbitf(float x) { return __float_as_int(x) < 0; }

/* conversions with an explicit rounding: rn nearest even, rz toward zero, rd down, ru up */
__qwengpu_float_fn int __float2int_rn(float x) { return __nvvm_f2i_rn(x); }
__qwengpu_float_fn int __float2int_rz(float x) { return __nvvm_f2i_rz(x); }
__qwengpu_float_fn int __float2int_rd(float x) { return __nvvm_f2i_rm(x); }
__qwengpu_float_fn int __float2int_ru(float x) { return __nvvm_f2i_rp(x); }
__qwengpu_float_fn unsigned int __float2uint_rn(float x) { return __nvvm_f2ui_rn(x); }
__qwengpu_float_fn unsigned int __float2uint_rz(float x) { return __nvvm_f2ui_rz(x); }
__qwengpu_float_fn unsigned int __float2uint_rd(float x) { return __nvvm_f2ui_rm(x); }
__qwengpu_float_fn unsigned int __float2uint_ru(float x) { return __nvvm_f2ui_rp(x); }
__qwengpu_float_fn float __int2float_rn(int x) { return __nvvm_i2f_rn(x); }
/* clang 14 emits cvt.rn for __nvvm_i2f_rz/__nvvm_ui2f_rz: the instruction itself, as PTX */
__qwengpu_float_fn float __int2float_rz(int x) {
  float r;
  asm("cvt.rz.f32.s32 %0, %1;" : "=f"(r) : "r"(x));
  return r;
}
__qwengpu_float_fn float __int2float_rd(int x) { return __nvvm_i2f_rm(x); }
__qwengpu_float_fn float __int2float_ru(int x) { return __nvvm_i2f_rp(x); }
__qwengpu_float_fn float __uint2float_rn(unsigned int x) { return __nvvm_ui2f_rn(x); }
__qwengpu_float_fn float __uint2float_rz(unsigned int x) {
  float r;
  asm("cvt.rz.f32.u32 %0, %1;" : "=f"(r) : "r"(x));
  return r;
}
__qwengpu_float_fn float __uint2float_rd(unsigned int x) { return __nvvm_ui2f_rm(x); }
__qwengpu_float_fn float __uint2float_ru(unsigned int x) { return __nvvm_ui2f_rp(x); }

/* arithmetic with the rounding named (round to nearest even, as the operators). CUDA says
   __fadd_rn/__fsub_rn/__fmul_rn are never merged into a multiply-add (nvcc writes add.rn/mul.rn,
   which ptxas does not fuse); clang 14 turns __nvvm_mul_rn_f/__nvvm_add_rn_f into a plain fmul/
   fadd and contracts them into fma.rn.f32, a different rounding: so the instruction itself. */
__qwengpu_float_fn float __fadd_rn(float a, float b) {
  float r;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__qwengpu_float_fn float __fsub_rn(float a, float b) {
  float r;
  asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__qwengpu_float_fn float __fmul_rn(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__qwengpu_float_fn float __fmaf_rn(float a, float b, float c) { return __nvvm_fma_rn_f(a, b, c); }
__qwengpu_float_fn float __fdiv_rn(float a, float b) { return __nvvm_div_rn_f(a, b); }
__qwengpu_float_fn float __frcp_rn(float x) { return __nvvm_rcp_rn_f(x); }
__qwengpu_float_fn float __fsqrt_rn(float x) { return __nvvm_sqrt_rn_f(x); }
__qwengpu_float_fn float __fdividef(float a, float b) { return __nvvm_div_approx_f(a, b); }
__qwengpu_float_fn float fdividef(float a, float b) { return __nvvm_div_approx_f(a, b); }

/* the float overloads of C++'s math functions, as CUDA's headers give them */
__qwengpu_float_fn float sqrt(float x) { return sqrtf(x); }
__qwengpu_float_fn float fabs(float x) { return fabsf(x); }
__qwengpu_float_fn float abs(float x) { return fabsf(x); }
__qwengpu_float_fn float fmin(float a, float b) { return fminf(a, b); }
__qwengpu_float_fn float fmax(float a, float b) { return fmaxf(a, b); }
__qwengpu_float_fn float min(float a, float b) { return fminf(a, b); }
__qwengpu_float_fn float max(float a, float b) { return fmaxf(a, b); }
__qwengpu_float_fn float fma(float a, float b, float c) { return fmaf(a, b, c); }
__qwengpu_float_fn float floor(float x) { return floorf(x); }
__qwengpu_float_fn float ceil(float x) { return ceilf(x); }
__qwengpu_float_fn float trunc(float x) { return truncf(x); }
__qwengpu_float_fn float rint(float x) { return rintf(x); }
__qwengpu_float_fn float round(float x) { return roundf(x); }
__qwengpu_float_fn float copysign(float a, float b) { return copysignf(a, b); }
__qwengpu_float_fn bool isnan(float x) { return __builtin_isnan(x); }
__qwengpu_float_fn bool isinf(float x) { return __builtin_isinf(x); }
__qwengpu_float_fn bool isfinite(float x) { return __builtin_isfinite(x); }
__qwengpu_float_fn bool signbit(float x) { return __float_as_int(x) < 0; }

/* float warp shuffles: the float's 32 bits through the int shuffle (prelude_warps.h), under
   the same rules (the constant full mask, a power-of-two width) */
#define __qwengpu_float_shfl(name, mode)                                                          \
  __qwengpu_float_fn float name(unsigned mask, float var, int b, int width = QWENGPU_WARP_SIZE)   \
      __attribute__((diagnose_if(!__builtin_constant_p(mask) || mask != 0xffffffffu,              \
                                 "warp operations here need the member mask to be the constant "   \
                                 "0xffffffff (the warp is the whole thread block): call it where " \
                                 "every thread of the block does, with 0xffffffff", "error")))     \
      __attribute__((diagnose_if(width < 1 || width > 32 || (width & (width - 1)) != 0,          \
                                 "the shuffle width must be a power of two from 1 to 32", "error"))) { \
    return __int_as_float(__qwengpu_shuffle(mode, __float_as_int(var), (unsigned)b, width));       \
  }
__qwengpu_float_shfl(__shfl_sync, 0)
__qwengpu_float_shfl(__shfl_up_sync, 1)
__qwengpu_float_shfl(__shfl_down_sync, 2)
__qwengpu_float_shfl(__shfl_xor_sync, 3)
#undef __qwengpu_float_shfl

/* libdevice's functions: no PTX instruction computes them, so a call is refused here */
#define __qwengpu_no_libdevice(name)                                                              \
  __attribute__((diagnose_if(1, #name " is not supported: it comes from libdevice, which this "     \
                                "machine does not have (only functions that are PTX instructions: "  \
                                "sqrtf, fabsf, fminf, fmaxf, fmaf, floorf, ceilf, truncf, rintf, "   \
                                "roundf, copysignf; division and the operators)", "error")))
#define __qwengpu_refused1(name) __qwengpu_float_fn __qwengpu_no_libdevice(name) float name(float x) { return x; }
#define __qwengpu_refused2(name)                                                                  \
  __qwengpu_float_fn __qwengpu_no_libdevice(name) float name(float x, float y) { return x; }
__qwengpu_refused1(expf) __qwengpu_refused1(exp2f) __qwengpu_refused1(exp10f) __qwengpu_refused1(expm1f)
__qwengpu_refused1(logf) __qwengpu_refused1(log2f) __qwengpu_refused1(log10f) __qwengpu_refused1(log1pf)
__qwengpu_refused1(sinf) __qwengpu_refused1(cosf) __qwengpu_refused1(tanf) __qwengpu_refused1(tanhf)
__qwengpu_refused1(asinf) __qwengpu_refused1(acosf) __qwengpu_refused1(atanf) __qwengpu_refused1(sinhf)
__qwengpu_refused1(coshf) __qwengpu_refused1(cbrtf) __qwengpu_refused1(erff) __qwengpu_refused1(__expf)
__qwengpu_refused1(__logf) __qwengpu_refused1(__sinf) __qwengpu_refused1(__cosf) __qwengpu_refused1(rsqrtf)
__qwengpu_refused2(powf) __qwengpu_refused2(fmodf) __qwengpu_refused2(atan2f) __qwengpu_refused2(hypotf)
__qwengpu_refused2(__powf) __qwengpu_refused2(remainderf)
__qwengpu_refused1(lrintf) __qwengpu_refused1(lroundf) /* long is 64 bits: use __float2int_rn, (int)roundf */
__qwengpu_refused1(logbf) __qwengpu_refused1(erfcf) __qwengpu_refused1(erfinvf) __qwengpu_refused1(lgammaf)
__qwengpu_refused1(tgammaf) __qwengpu_refused1(asinhf) __qwengpu_refused1(acoshf) __qwengpu_refused1(atanhf)
__qwengpu_refused1(rcbrtf) __qwengpu_refused1(sinpif) __qwengpu_refused1(cospif) __qwengpu_refused1(__frsqrt_rn)
__qwengpu_refused1(__exp10f) __qwengpu_refused1(__log2f) __qwengpu_refused1(__log10f) __qwengpu_refused1(__tanf)
__qwengpu_refused2(nextafterf) __qwengpu_refused2(rhypotf)
/* the ones with an integer or a pointer argument */
__qwengpu_float_fn __qwengpu_no_libdevice(ldexpf) float ldexpf(float x, int n) { return x; }
__qwengpu_float_fn __qwengpu_no_libdevice(scalbnf) float scalbnf(float x, int n) { return x; }
__qwengpu_float_fn __qwengpu_no_libdevice(frexpf) float frexpf(float x, int* e) { return x; }
__qwengpu_float_fn __qwengpu_no_libdevice(modff) float modff(float x, float* whole) { return x; }
__qwengpu_float_fn __qwengpu_no_libdevice(ilogbf) int ilogbf(float x) { return 0; }
__qwengpu_float_fn __qwengpu_no_libdevice(sincosf) void sincosf(float x, float* s, float* c) {}
#undef __qwengpu_refused1
#undef __qwengpu_refused2
#undef __qwengpu_no_libdevice

#undef __qwengpu_float_fn
#endif /* __NVCC__ */
#endif /* QWENGPU_PRELUDE_FLOAT_H */
