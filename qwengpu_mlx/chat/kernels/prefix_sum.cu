// Inclusive prefix sum in place, one element per thread: each group of 4 lanes (the machine's
// warp) scans itself with up shuffles of width 4 (the machine's own 4-lane shuffle, no
// exchange through memory) and adds carry[0], the total of all earlier elements; its lane 3 then stores
// the new total there. Warps run one after another on this machine (docs/MACHINE.md,
// "Scheduling"), so each warp sees the carry of the warps before it. Lanes past n add 0.
__global__ void prefix_sum(int* x, int* carry, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 3;
    int v = i < n ? x[min(i, n - 1)] : 0;
#pragma unroll
    for (int d = 1; d < 4; d <<= 1) {
        int y = __shfl_up_sync(0xffffffffu, v, d, 4);
        if (lane >= d) v += y;
    }
    v += carry[0];
    if (i < n) x[i] = v;
    if (lane == 3) carry[0] = v;
}
