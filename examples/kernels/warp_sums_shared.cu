// Warp sums by xor shuffles, then combined across warps through shared memory.
__global__ void warp_sums_shared(const int* x, int* partial, int* total) {
    __shared__ int ws[4];
    int t = threadIdx.x;
    int lane = t % warpSize;
    int warp = t / warpSize;
    int v = x[t];
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    if (lane == 0) ws[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int w = ws[lane];
        partial[lane] = w;
        w += __shfl_down_sync(0xffffffffu, w, 2);
        w += __shfl_down_sync(0xffffffffu, w, 1);
        if (lane == 0) total[0] = w;
    }
}
