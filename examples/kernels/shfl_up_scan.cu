// Inclusive warp scan with __shfl_up_sync; lanes below the offset keep their value.
__global__ void shfl_up_scan(const int* x, int* out) {
    int t = threadIdx.x;
    int lane = t % warpSize;
    int v = x[t];
    for (int d = 1; d < warpSize; d <<= 1) {
        int y = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += y;
    }
    out[t] = v;
}
