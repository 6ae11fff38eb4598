// Shared-memory reduction per block in a 2-block grid (blocks run one after another).
__global__ void grid_shared_reduce(const int* x, int* out) {
    __shared__ int s[8];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
