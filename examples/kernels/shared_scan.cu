// Hillis-Steele inclusive scan in shared memory with two barriers per step.
__global__ void shared_scan(const int* x, int* out) {
    __shared__ int s[16];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    for (int d = 1; d < blockDim.x; d <<= 1) {
        int v = s[t];
        if (t >= d) v += s[t - d];
        __syncthreads();
        s[t] = v;
        __syncthreads();
    }
    out[t] = s[t];
}
