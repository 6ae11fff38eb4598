// Width 2 scan, width 1 (always own value) and a width-2 xor with lane mask 2, which
// crosses segments: a lane may read an earlier segment but reads its own value when the
// source is in a later one (CUDA's rule for __shfl_xor_sync with width < warpSize).
__global__ void shfl_width_mixed(const int* x, int* scan2, int* own, int* cross) {
    int t = threadIdx.x;
    int v = x[t];
    int y = __shfl_up_sync(0xffffffffu, v, 1, 2);
    scan2[t] = (t & 1) ? v + y : v;
    own[t] = __shfl_sync(0xffffffffu, v, 0, 1);
    cross[t] = __shfl_xor_sync(0xffffffffu, v, 2, 2);
}
