// A 3-point average with the ends held: out[i] = (x[i-1] + x[i] + x[i+1]) / 3 inside,
// out[i] = x[i] at the two ends (two adds and a correctly rounded division).
__global__ void float_stencil(const float* x, float* out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    if (i == 0 || i == n - 1) out[i] = x[i];
    else out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0f;
}
