// Shuffles with width 2: each warp is two independent 2-lane segments.
__global__ void shfl_width2(const int* x, int* idx, int* up, int* down, int* bfly) {
    int t = threadIdx.x;
    int v = x[t];
    idx[t] = __shfl_sync(0xffffffffu, v, 1, 2);
    up[t] = __shfl_up_sync(0xffffffffu, v, 1, 2);
    down[t] = __shfl_down_sync(0xffffffffu, v, 1, 2);
    bfly[t] = __shfl_xor_sync(0xffffffffu, v, 1, 2);
}
