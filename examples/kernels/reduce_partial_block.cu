// Tree sum with blockDim 7: the second warp has 3 lanes.
__global__ void reduce_partial_block(const int* x, int* out) {
    __shared__ int s[8];
    int t = threadIdx.x;
    int n = blockDim.x;
    s[t] = x[t];
    __syncthreads();
    #pragma unroll 1
    for (int stride = 4; stride > 0; stride >>= 1) {
        if (t < stride && t + stride < n) s[t] += s[t + stride];
        __syncthreads();
    }
    out[t] = s[0];
}
