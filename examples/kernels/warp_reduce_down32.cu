// The canonical warp sum: __shfl_down_sync by 16, 8, 4, 2, 1 over a full 32-lane warp.
// Lane 0 holds the sum of all 32 values; every lane's partial sum is written too (a lane
// whose source is past lane 31 keeps its own value).
__global__ void warp_reduce_down32(const int* x, int* partial, int* sum) {
    int v = x[threadIdx.x];
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    partial[threadIdx.x] = v;
    if (threadIdx.x == 0) sum[0] = v;
}
