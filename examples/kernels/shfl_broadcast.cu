// __shfl_sync idx mode: every lane of the warp reads lane 0, then lane 3.
__global__ void shfl_broadcast(const int* x, int* from0, int* from3) {
    int t = threadIdx.x;
    int v = x[t];
    from0[t] = __shfl_sync(0xffffffffu, v, 0);
    from3[t] = __shfl_sync(0xffffffffu, v, 3);
}
