// Butterfly all-reduce over 32 lanes: after xor 16, 8, 4, 2, 1 every lane holds the
// warp's sum and minimum.
__global__ void warp_xor_allreduce32(const int* x, int* sum, int* lo) {
    int s = x[threadIdx.x], m = s;
    for (int mask = warpSize / 2; mask > 0; mask >>= 1) {
        s += __shfl_xor_sync(0xffffffff, s, mask);
        m = min(m, __shfl_xor_sync(0xffffffff, m, mask));
    }
    sum[threadIdx.x] = s;
    lo[threadIdx.x] = m;
}
