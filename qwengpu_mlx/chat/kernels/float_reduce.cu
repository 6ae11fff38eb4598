// Float reductions, each a float32 result computed on the GPU.
// mean_i: the mean of integers as a float, (float)sum / (float)n: the integer sum by
// atomicAdd into `sum` (exact in 32 bits, so the order of the lanes does not matter),
// a barrier, then thread 0 converts and divides (div.rn.f32). One block: a barrier
// spans a block. The caller keeps the sum within 32 bits.
__global__ void mean_i(const int* x, int* sum, float* out, int n) {
    for (int k = threadIdx.x; k < n; k += blockDim.x) atomicAdd(sum, x[k]);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = (float)sum[0] / (float)n;
}

// sum_f and mean_f: one thread adds the floats in index order, s = ((x0 + x1) + x2) + ...,
// because float addition is not associative: a fixed order gives one answer, the one a
// sequential loop on any GPU gives.
__global__ void sum_f(const float* x, float* out, int n) {
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < n; k++) s += x[k];
    out[0] = s;
}

__global__ void mean_f(const float* x, float* out, int n) {
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < n; k++) s += x[k];
    out[0] = s / (float)n;
}

// dot_f: one thread, s = fma(a[k], b[k], s) in index order: each product added with one
// rounding (what clang's contraction of s += a[k] * b[k] gives), from s = +0.
__global__ void dot_f(const float* a, const float* b, float* out, int n) {
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < n; k++) s = fmaf(a[k], b[k], s);
    out[0] = s;
}

// min_f and max_f: one thread folds fminf/fmaxf in index order (min.f32/max.f32: a NaN
// gives the other operand, all NaNs the canonical NaN, -0 below +0).
__global__ void min_f(const float* x, float* out, int n) {
    float m = x[0];
#pragma unroll 1
    for (int k = 1; k < n; k++) m = fminf(m, x[k]);
    out[0] = m;
}

__global__ void max_f(const float* x, float* out, int n) {
    float m = x[0];
#pragma unroll 1
    for (int k = 1; k < n; k++) m = fmaxf(m, x[k]);
    out[0] = m;
}
