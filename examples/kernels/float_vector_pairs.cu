// CUDA's vector types: each thread loads one float4 (a 16-byte vector load,
// ld.global.v4.f32, one machine load per element) and stores one float2 made by
// make_float2: the sum of the first two elements and the product of the last two.
__global__ void float_vector_pairs(const float4 *v, float2 *out) {
  int i = threadIdx.x;
  float4 p = v[i];
  out[i] = make_float2(p.x + p.y, p.z * p.w);
}
