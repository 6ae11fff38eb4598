// Grid-stride loop over n elements with 3 blocks of 4 threads.
__global__ void grid_stride(const int* x, int* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        out[i] = x[i] * 2 + i;
    }
}
