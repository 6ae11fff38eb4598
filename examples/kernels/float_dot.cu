// A float32 dot product by one thread, in order: s += x[k] * y[k] is one fma.rn.f32 per
// element (clang contracts it), so each step rounds once.
__global__ void float_dot(const float* x, const float* y, float* out, int n) {
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < n; k++) s += x[k] * y[k];
    out[0] = s;
}
