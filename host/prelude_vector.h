/* qwengpu prelude, CUDA's vector types: float2, float4, int2, int4, uint2, uint4 (and the
 * 3-element ones), with their make_ functions, declared as CUDA's vector_types.h and
 * vector_functions.h declare them (clang -nocudainc brings none).
 *
 * The 2- and 4-element types are aligned to 8 and 16 bytes as CUDA aligns them, so clang
 * loads and stores a whole one with one vector instruction (ld.global.v4.f32 ...), which
 * the host lowers to one machine load or store per element (host/translate_memory.py).
 */
#ifndef QWENGPU_PRELUDE_VECTOR_H
#define QWENGPU_PRELUDE_VECTOR_H
#ifndef __NVCC__

#define __qwengpu_vector_fn static __host__ __device__ __forceinline__ __qwengpu_nodebug

struct __attribute__((aligned(8))) float2 { float x, y; };
struct float3 { float x, y, z; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(8))) int2 { int x, y; };
struct int3 { int x, y, z; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };
struct __attribute__((aligned(8))) uint2 { unsigned int x, y; };
struct __attribute__((aligned(16))) uint4 { unsigned int x, y, z, w; };

__qwengpu_vector_fn float2 make_float2(float x, float y) { float2 v = {x, y}; return v; }
__qwengpu_vector_fn float3 make_float3(float x, float y, float z) { float3 v = {x, y, z}; return v; }
__qwengpu_vector_fn float4 make_float4(float x, float y, float z, float w) { float4 v = {x, y, z, w}; return v; }
__qwengpu_vector_fn int2 make_int2(int x, int y) { int2 v = {x, y}; return v; }
__qwengpu_vector_fn int3 make_int3(int x, int y, int z) { int3 v = {x, y, z}; return v; }
__qwengpu_vector_fn int4 make_int4(int x, int y, int z, int w) { int4 v = {x, y, z, w}; return v; }
__qwengpu_vector_fn uint2 make_uint2(unsigned int x, unsigned int y) { uint2 v = {x, y}; return v; }
__qwengpu_vector_fn uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
  uint4 v = {x, y, z, w};
  return v;
}

#endif /* __NVCC__ */
#endif /* QWENGPU_PRELUDE_VECTOR_H */
