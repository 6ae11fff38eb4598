// __shfl_sync idx mode: broadcast lane 0 and lane 3 of each warp.
__global__ void shfl_broadcast(const int* x, int* from0, int* from3) {
    int t = threadIdx.x;
    int v = x[t];
    from0[t] = __shfl_sync(0xffffffffu, v, 0);
    from3[t] = __shfl_sync(0xffffffffu, v, 3);
}
