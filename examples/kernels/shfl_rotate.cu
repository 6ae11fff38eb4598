// __shfl_sync with a per-lane source lane and width 4: rotate and reverse within each
// group of 4 lanes.
__global__ void shfl_rotate(const int* x, int* rot, int* rev) {
    int t = threadIdx.x;
    int lane = t & 3;
    int v = x[t];
    rot[t] = __shfl_sync(0xffffffffu, v, (lane + 1) & 3, 4);
    rev[t] = __shfl_sync(0xffffffffu, v, 3 - lane, 4);
}
