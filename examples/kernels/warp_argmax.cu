// Warp argmax: reduce (value, index) pairs with xor shuffles; ties pick the smaller index.
__global__ void warp_argmax(const int* x, int* best, int* where) {
    int t = threadIdx.x;
    int v = x[t];
    int i = t;
    for (int d = 1; d < 4; d <<= 1) {
        int ov = __shfl_xor_sync(0xffffffffu, v, d);
        int oi = __shfl_xor_sync(0xffffffffu, i, d);
        if (ov > v || (ov == v && oi < i)) {
            v = ov;
            i = oi;
        }
    }
    if ((t & 3) == 0) {
        best[t / 4] = v;
        where[t / 4] = i;
    }
}
