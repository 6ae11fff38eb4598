// blockDim 6: rotate by two through shared memory, second warp has 2 lanes.
__global__ void shared_partial6(const int* x, int* out) {
    __shared__ int s[6];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    int j = t + 2;
    if (j >= (int)blockDim.x) j -= blockDim.x;
    out[t] = s[j] - t;
}
