// Global index from blockIdx, blockDim, threadIdx; partial warps in each block.
__global__ void grid_index(int* out) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    out[g] = blockIdx.x * 1000 + threadIdx.x * 10 + gridDim.x;
}
