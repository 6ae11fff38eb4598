// The mean and population variance of n floats by one thread: the sum in index order, a
// correctly rounded division by n (cvt.rn.f32.s32), then the squared deviations summed
// through an fma, divided by n again. Inlined, its float routines (two adds, an fma, two
// divisions, a conversion) need 176 blocks: the large machine's ROM holds 128, so the
// lowering calls one shared copy of the add and of the division from both of their sites.
__global__ void float_variance(const float* x, int n, float* out) {
    if (threadIdx.x != 0) return;
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < n; k++) s += x[k];
    float mean = s / (float)n;
    float q = 0.0f;
#pragma unroll 1
    for (int k = 0; k < n; k++) {
        float d = x[k] - mean;
        q = fmaf(d, d, q);
    }
    out[0] = mean;
    out[1] = q / (float)n;
}
