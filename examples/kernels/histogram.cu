// Histogram of values 0..7 with atomicAdd, over a 2-block grid.
__global__ void histogram(const int* data, int* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[data[i] & 7], 1);
}
