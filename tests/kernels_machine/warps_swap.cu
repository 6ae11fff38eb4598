// Every warp writes shared memory, waits at a barrier, then reads another warp's words.
__global__ void warps_swap(const int* x, int* out) {
    __shared__ int s[16];
    int t = threadIdx.x;
    s[t] = x[t] * 3 + t;
    __syncthreads();
    out[t] = s[blockDim.x - 1 - t] - s[t];
}
