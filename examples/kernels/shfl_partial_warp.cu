// blockDim 5: lanes 5..31 of the warp do not exist; shuffles from them read own value.
__global__ void shfl_partial_warp(const int* x, int* sum, int* b3) {
    int t = threadIdx.x;
    int v = x[t];
    int s = v;
    s += __shfl_down_sync(0xffffffffu, s, 2);
    s += __shfl_down_sync(0xffffffffu, s, 1);
    sum[t] = s;
    b3[t] = __shfl_sync(0xffffffffu, v, 3);
}
