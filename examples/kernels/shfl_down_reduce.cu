// Sums of 4 neighbours with __shfl_down_sync by 2 and 1 and no guard: a lane whose source
// does not exist (lanes 6, 7 of an 8-thread block) reads its own value.
__global__ void shfl_down_reduce(const int* x, int* all, int* sums) {
    int t = threadIdx.x;
    int v = x[t];
    v += __shfl_down_sync(0xffffffffu, v, 2);
    v += __shfl_down_sync(0xffffffffu, v, 1);
    all[t] = v;
    if ((t & 3) == 0) sums[t / 4] = v;
}
