// The integer mean of an array: a shared sum by atomics, then one thread divides by n
__global__ void average(const int* x, int* mean, int n) {
    __shared__ int total;
    int i = threadIdx.x;
    if (i == 0) total = 0;
    __syncthreads();
    for (int k = i; k < n; k += blockDim.x) atomicAdd(&total, x[k]);
    __syncthreads();
    if (i == 0) *mean = total / n;
}
