// Each warp reads the next warp's values (warp 3 reads warp 0), twice, with barriers.
__global__ void shared_rotate_warps(int* x) {
    __shared__ int s[16];
    int t = threadIdx.x;
    int v = x[t];
    #pragma unroll 1
    for (int r = 0; r < 2; r++) {
        s[t] = v;
        __syncthreads();
        int src = t + 4;
        if (src >= 16) src -= 16;
        v = s[src] + 1;
        __syncthreads();
    }
    x[t] = v;
}
