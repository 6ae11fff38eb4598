// Broadcast from a runtime source lane in a 3-block grid.
__global__ void shfl_broadcast_multi(const int* x, int* out, int src) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[g];
    out[g] = __shfl_sync(0xffffffffu, v, src) + (int)blockIdx.x;
}
