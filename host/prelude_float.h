/* qwengpu prelude, float intrinsics: CUDA's float32 functions, declared as CUDA's
 * headers declare them (clang -nocudainc brings none, and there is no libdevice).
 *
 * Each maps to a clang builtin that the NVPTX back end emits as one plain PTX
 * instruction (mov.b32, sqrt.rn.f32, cvt.rmi.f32.f32, cvt.rzi.s32.f32 ...), which the
 * host lowers to routines of the machine's integer instructions: the model computes
 * every result, bit for bit as a GPU does (no fast math: sqrtf is sqrt.rn.f32).
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

#undef __qwengpu_float_fn
#endif /* __NVCC__ */
#endif /* QWENGPU_PRELUDE_FLOAT_H */
