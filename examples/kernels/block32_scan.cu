// An inclusive prefix sum over a 32-thread block through shared memory (Hillis-Steele)
__global__ void block32_scan(const int* x, int* out) {
    __shared__ int s[32];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    for (int d = 1; d < 32; d <<= 1) {
        int v = t >= d ? s[t - d] : 0;
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    out[t] = s[t];
}
