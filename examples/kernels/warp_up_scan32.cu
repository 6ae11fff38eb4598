// Inclusive prefix sums with __shfl_up_sync over a 32-lane warp, and within segments of
// 8 lanes (width 8): a lane below the offset in its segment keeps its value.
__global__ void warp_up_scan32(const int* x, int* scan, int* scan8) {
    int lane = threadIdx.x % warpSize;
    int v = x[threadIdx.x], s = v;
    for (int d = 1; d < warpSize; d *= 2) {
        int y = __shfl_up_sync(0xffffffff, v, d);
        if (lane >= d) v += y;
    }
    for (int d = 1; d < 8; d *= 2) {
        int y = __shfl_up_sync(0xffffffff, s, d, 8);
        if ((lane & 7) >= d) s += y;
    }
    scan[threadIdx.x] = v;
    scan8[threadIdx.x] = s;
}
