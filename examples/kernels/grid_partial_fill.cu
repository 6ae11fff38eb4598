// 2 blocks of 5 threads (each with a 1-lane second warp) fill an array, guarded by n.
__global__ void grid_partial_fill(int* out, int base, int n) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n) out[g] = base - g * g;
}
