// c[i] = a[i] + b[i] over a size_t grid-stride loop, as CUDA tutorials write it:
// the index and the bound are 64-bit (size_t), the loop runs until i >= n.
__global__ void gridstride64_add(const int *a, const int *b, int *c, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x)
        c[i] = a[i] + b[i];
}
