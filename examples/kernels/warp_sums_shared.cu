// Sums of 4-lane groups by xor shuffles, then combined through shared memory and a
// width-4 down shuffle.
__global__ void warp_sums_shared(const int* x, int* partial, int* total) {
    __shared__ int ws[4];
    int t = threadIdx.x;
    int lane = t % 4;
    int group = t / 4;
    int v = x[t];
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    if (lane == 0) ws[group] = v;
    __syncthreads();
    int w = t < 4 ? ws[t] : 0;
    if (t < 4) partial[t] = w;
    w += __shfl_down_sync(0xffffffffu, w, 2, 4);
    w += __shfl_down_sync(0xffffffffu, w, 1, 4);
    if (t == 0) total[0] = w;
}
