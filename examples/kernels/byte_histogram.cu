// Histogram of unsigned char values in 8 bins of 32 (the top three bits), a grid-stride loop.
__global__ void byte_histogram(const unsigned char* data, int* bins, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&bins[data[i] >> 5], 1);
}
