// __shfl_sync with width 8: lane 3 of each 8-lane segment broadcast, a source lane read
// from memory per lane (taken modulo the width, as CUDA does), and a whole-warp read of
// lane 13.
__global__ void warp_idx_width8(const int* x, const int* src, int* from3, int* picked, int* from13) {
    int t = threadIdx.x;
    int v = x[t];
    from3[t] = __shfl_sync(0xffffffff, v, 3, 8);
    picked[t] = __shfl_sync(0xffffffff, v, src[t], 8);
    from13[t] = __shfl_sync(0xffffffff, v, 13);
}
