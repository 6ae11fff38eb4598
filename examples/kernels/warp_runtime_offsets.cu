// Shuffles whose offsets are not constants: a down shuffle by a kernel argument (width 16:
// a source past lane 15 is the lane's own value), an xor by a lane mask read from memory
// per lane, and an up shuffle with a runtime width.
__global__ void warp_runtime_offsets(const int* x, const int* masks, int* down, int* bfly, int* up,
                                     int k, int width) {
    int t = threadIdx.x;
    int v = x[t];
    down[t] = __shfl_down_sync(0xffffffff, v, k, 16);
    bfly[t] = __shfl_xor_sync(0xffffffff, v, masks[t]);
    up[t] = __shfl_up_sync(0xffffffff, v, 1, width);
}
