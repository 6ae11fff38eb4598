// __fmul_rn and __fadd_rn are never merged into a multiply-add (CUDA): two roundings,
// where the plain a * b + c is contracted into one fma (one rounding).
__global__ void float_rn_unfused(const float* a, const float* b, const float* c, float* twice, float* once) {
    int i = threadIdx.x;
    twice[i] = __fadd_rn(__fmul_rn(a[i], b[i]), c[i]);
    once[i] = a[i] * b[i] + c[i];
}
