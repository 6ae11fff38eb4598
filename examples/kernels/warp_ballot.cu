// Emulated ballot: OR-reduce (pred << lane) with xor shuffles; every lane gets the mask.
__global__ void warp_ballot(const int* x, int* mask, int* count) {
    int t = threadIdx.x;
    int lane = t & 3;
    int b = x[t] > 0 ? (1 << lane) : 0;
    b |= __shfl_xor_sync(0xffffffffu, b, 1);
    b |= __shfl_xor_sync(0xffffffffu, b, 2);
    mask[t] = b;
    int c = x[t] > 0 ? 1 : 0;
    c += __shfl_xor_sync(0xffffffffu, c, 1);
    c += __shfl_xor_sync(0xffffffffu, c, 2);
    if (lane == 0) count[t / 4] = c;
}
