// Histogram, one element per thread: each adds 1 to hist[data[i]] atomically (the host
// checks 0 <= data[i] < bins before the launch; hist is bound to zeros).
__global__ void histogram(const int* data, int* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[data[i]], 1);
}
