// Per-block and grid-wide sums with atomicAdd across a 4-block grid.
__global__ void grid_block_sums(const int* x, int* blocksum, int* total) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[g];
    atomicAdd(&blocksum[blockIdx.x], v);
    atomicAdd(total, v);
}
