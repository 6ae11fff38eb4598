/* qwengpu prelude, atomics: every CUDA integer atomic, declared as CUDA's headers
 * declare them (device_atomic_functions.h, sm_60_atomic_functions.h), for clang with
 * -nocudainc. Included by prelude.h; under nvcc its own headers declare them.
 *
 * Each is one of clang's __nvvm_atom_* builtins, which become PTX atom.OP.{s32,u32,b32};
 * the host lowers atom.add to the machine's atomic add and every other one to a routine
 * of ordinary instructions (host/translate_atomics.py). atomicSub adds the negation, as
 * CUDA's own header does (PTX has no atom.sub). The _block and _system scopes are the
 * same operation on this one-device machine, whose memory is sequentially consistent.
 *
 * float atomicAdd and atomicExch are here too (atomicAdd as a routine of the float add).
 * 64-bit atomics are declared unavailable: a call is refused by clang at the user's line,
 * with the way around it.
 */
#ifndef QWENGPU_PRELUDE_ATOMICS_H
#define QWENGPU_PRELUDE_ATOMICS_H
#ifndef __NVCC__

#define QWENGPU_ATOMIC static __device__ __forceinline__ __qwengpu_nodebug

/* atomicAdd(int), atomicAdd(unsigned) are prelude.h's own: one atom.add each. */
QWENGPU_ATOMIC int atomicSub(int *p, int v) { return __nvvm_atom_add_gen_i(p, -v); }
QWENGPU_ATOMIC unsigned atomicSub(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_add_gen_i((int *)p, -(int)v);
}
QWENGPU_ATOMIC int atomicExch(int *p, int v) { return __nvvm_atom_xchg_gen_i(p, v); }
QWENGPU_ATOMIC unsigned atomicExch(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_xchg_gen_i((int *)p, (int)v);
}
QWENGPU_ATOMIC int atomicMin(int *p, int v) { return __nvvm_atom_min_gen_i(p, v); }
QWENGPU_ATOMIC unsigned atomicMin(unsigned *p, unsigned v) { return __nvvm_atom_min_gen_ui(p, v); }
QWENGPU_ATOMIC int atomicMax(int *p, int v) { return __nvvm_atom_max_gen_i(p, v); }
QWENGPU_ATOMIC unsigned atomicMax(unsigned *p, unsigned v) { return __nvvm_atom_max_gen_ui(p, v); }
/* ((old >= v) ? 0 : old + 1) and (((old == 0) || (old > v)) ? v : old - 1), unsigned. */
QWENGPU_ATOMIC unsigned atomicInc(unsigned *p, unsigned v) { return __nvvm_atom_inc_gen_ui(p, v); }
QWENGPU_ATOMIC unsigned atomicDec(unsigned *p, unsigned v) { return __nvvm_atom_dec_gen_ui(p, v); }
QWENGPU_ATOMIC int atomicCAS(int *p, int compare, int v) { return __nvvm_atom_cas_gen_i(p, compare, v); }
QWENGPU_ATOMIC unsigned atomicCAS(unsigned *p, unsigned compare, unsigned v) {
  return (unsigned)__nvvm_atom_cas_gen_i((int *)p, (int)compare, (int)v);
}
QWENGPU_ATOMIC int atomicAnd(int *p, int v) { return __nvvm_atom_and_gen_i(p, v); }
QWENGPU_ATOMIC unsigned atomicAnd(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_and_gen_i((int *)p, (int)v);
}
QWENGPU_ATOMIC int atomicOr(int *p, int v) { return __nvvm_atom_or_gen_i(p, v); }
QWENGPU_ATOMIC unsigned atomicOr(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_or_gen_i((int *)p, (int)v);
}
QWENGPU_ATOMIC int atomicXor(int *p, int v) { return __nvvm_atom_xor_gen_i(p, v); }
QWENGPU_ATOMIC unsigned atomicXor(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_xor_gen_i((int *)p, (int)v);
}

/* float atomicAdd: atom.add.f32, lowered to a serialised routine of the float add
 * (host/translate_atomics_float.py), rounded as one add after another in the machine's
 * order. float atomicExch moves the float's 32 bits as an integer exchange does. */
QWENGPU_ATOMIC float atomicAdd(float *p, float v) { return __nvvm_atom_add_gen_f(p, v); }
QWENGPU_ATOMIC float atomicExch(float *p, float v) {
  return __builtin_bit_cast(float, __nvvm_atom_xchg_gen_i((int *)p, __builtin_bit_cast(int, v)));
}
QWENGPU_ATOMIC float atomicAdd_block(float *p, float v) { return atomicAdd(p, v); }
QWENGPU_ATOMIC float atomicAdd_system(float *p, float v) { return atomicAdd(p, v); }
QWENGPU_ATOMIC float atomicExch_block(float *p, float v) { return atomicExch(p, v); }
QWENGPU_ATOMIC float atomicExch_system(float *p, float v) { return atomicExch(p, v); }

/* The scoped forms (sm_60): the same atomics here. */
#define QWENGPU_SCOPED(name)                                                                    \
  QWENGPU_ATOMIC int name##_block(int *p, int v) { return name(p, v); }                        \
  QWENGPU_ATOMIC unsigned name##_block(unsigned *p, unsigned v) { return name(p, v); }         \
  QWENGPU_ATOMIC int name##_system(int *p, int v) { return name(p, v); }                       \
  QWENGPU_ATOMIC unsigned name##_system(unsigned *p, unsigned v) { return name(p, v); }
QWENGPU_SCOPED(atomicAdd)
QWENGPU_SCOPED(atomicSub)
QWENGPU_SCOPED(atomicExch)
QWENGPU_SCOPED(atomicMin)
QWENGPU_SCOPED(atomicMax)
QWENGPU_SCOPED(atomicAnd)
QWENGPU_SCOPED(atomicOr)
QWENGPU_SCOPED(atomicXor)
#undef QWENGPU_SCOPED
QWENGPU_ATOMIC unsigned atomicInc_block(unsigned *p, unsigned v) { return atomicInc(p, v); }
QWENGPU_ATOMIC unsigned atomicInc_system(unsigned *p, unsigned v) { return atomicInc(p, v); }
QWENGPU_ATOMIC unsigned atomicDec_block(unsigned *p, unsigned v) { return atomicDec(p, v); }
QWENGPU_ATOMIC unsigned atomicDec_system(unsigned *p, unsigned v) { return atomicDec(p, v); }
QWENGPU_ATOMIC int atomicCAS_block(int *p, int c, int v) { return atomicCAS(p, c, v); }
QWENGPU_ATOMIC unsigned atomicCAS_block(unsigned *p, unsigned c, unsigned v) { return atomicCAS(p, c, v); }
QWENGPU_ATOMIC int atomicCAS_system(int *p, int c, int v) { return atomicCAS(p, c, v); }
QWENGPU_ATOMIC unsigned atomicCAS_system(unsigned *p, unsigned c, unsigned v) { return atomicCAS(p, c, v); }

/* What the machine cannot do: refused by clang where the kernel calls it. */
#define QWENGPU_NO_WIDE_ATOMIC                                                                  \
  __attribute__((unavailable("64-bit atomics are not supported: the machine's words are 32 bits; "  \
                             "use an int or unsigned counter")))
#define QWENGPU_UNAVAILABLE(name)                                                              \
  __device__ unsigned long long name(unsigned long long *, unsigned long long) QWENGPU_NO_WIDE_ATOMIC; \
  __device__ long long name(long long *, long long) QWENGPU_NO_WIDE_ATOMIC;
QWENGPU_UNAVAILABLE(atomicAdd)
QWENGPU_UNAVAILABLE(atomicExch)
QWENGPU_UNAVAILABLE(atomicMin)
QWENGPU_UNAVAILABLE(atomicMax)
QWENGPU_UNAVAILABLE(atomicAnd)
QWENGPU_UNAVAILABLE(atomicOr)
QWENGPU_UNAVAILABLE(atomicXor)
#undef QWENGPU_UNAVAILABLE
__device__ unsigned long long atomicCAS(unsigned long long *, unsigned long long,
                                        unsigned long long) QWENGPU_NO_WIDE_ATOMIC;

#undef QWENGPU_ATOMIC
#endif /* __NVCC__ */
#endif /* QWENGPU_PRELUDE_ATOMICS_H */
