// Threads that exit before a __syncthreads do not block it (the barrier counts live threads).
// n is a multiple of 4 so whole warps exit: a warp with some lanes returned and others at
// the barrier would hold those lanes at the branch's reconvergence point instead.
__global__ void early_return_barrier(const int* x, int* out, int n) {
    __shared__ int s[16];
    int t = threadIdx.x;
    if (t >= n) return;
    s[t] = x[t] * 3;
    __syncthreads();
    out[t] = s[n - 1 - t];
}
