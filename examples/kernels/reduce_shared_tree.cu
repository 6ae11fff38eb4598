// Shared-memory tree reduction across 4 warps with __syncthreads in a loop.
__global__ void reduce_shared_tree(const int* x, int* out) {
    __shared__ int s[16];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) out[0] = s[0];
}
