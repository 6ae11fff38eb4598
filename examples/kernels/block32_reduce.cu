// 32 threads in one block (one warp): squares, a down shuffle by 1 (lane 31 keeps its own),
// a shared-memory tree sum with barriers
__global__ void block32_reduce(const int* x, int* out, int* total) {
    __shared__ int s[32];
    int t = threadIdx.x;
    int v = x[t] * x[t];
    v += __shfl_down_sync(0xffffffffu, v, 1);
    s[t] = v;
    __syncthreads();
    for (int k = 16; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    out[t] = v;
    if (t == 0) *total = s[0];
}
