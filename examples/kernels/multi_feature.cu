// A mix: shuffle (lane 5 has no lane below it: own value), divergent loop, shared
// memory and an atomic in a 6-thread block.
__global__ void multi_feature(const int* x, int* out, int* total) {
    __shared__ int s[8];
    int t = threadIdx.x;
    int v = x[t];
    int n = __shfl_down_sync(0xffffffffu, v, 1);
    int acc = 0;
    for (int k = 0; k < (t & 3); k++) acc += n;
    s[t] = acc - v;
    __syncthreads();
    int j = blockDim.x - 1 - t;
    out[t] = s[j];
    atomicAdd(total, s[t]);
}
