// Block sums through dynamic shared memory: the launch sizes `s` (--shared, or the
// launch file's "shared": one int per thread), each block reduces its blockDim.x values
// as a tree and thread 0 writes the block's sum.
__global__ void dyn_shared_reduce(const int* x, int* sums) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half)
            s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0)
        sums[blockIdx.x] = s[0];
}
