// Shared-memory tree reduction for the maximum, blockDim 12 (3 warps), non-power-of-two size.
__global__ void reduce_shared_max(const int* x, int* out) {
    __shared__ int s[16];
    int t = threadIdx.x;
    int n = blockDim.x;
    s[t] = x[t];
    __syncthreads();
    #pragma unroll 1
    for (int stride = 8; stride > 0; stride >>= 1) {
        if (t < stride && t + stride < n) s[t] = max(s[t], s[t + stride]);
        __syncthreads();
    }
    if (t == 0) out[0] = s[0];
}
