// Correctly rounded division and reciprocal (div.rn.f32, rcp.rn.f32): 1/3, x/0 = inf,
// 0/0 = NaN, signed zeros, and quotients scaled into the subnormals.
__global__ void float_divide(const float* a, const float* b, float* q, float* r) {
    int i = threadIdx.x;
    q[i] = a[i] / b[i];
    r[i] = 1.0e-38f / b[i];
}
