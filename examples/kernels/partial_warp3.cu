// blockDim 3: a single partial warp.
__global__ void partial_warp3(const int* x, int* out) {
    int t = threadIdx.x;
    out[t] = x[t] * (t + 1) + blockDim.x;
}
