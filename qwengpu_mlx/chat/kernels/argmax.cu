// Argmax (the first index of the maximum), one element per thread: a warp reduces
// (value, index) pairs with xor shuffles, ties to the smaller index; then lane 0 replaces
// the running best (best[0], where[0], bound to x[0] and 0) when its value is strictly
// greater. Warps run one after another on this machine (docs/MACHINE.md, "Scheduling")
// and in index order, so strictly greater keeps the first maximal index.
// Lanes past n read x[n - 1] with index n - 1, which changes neither the maximum nor its
// first index.
__global__ void argmax(const int* x, int* best, int* where, int n) {
    int i = min((int)(blockIdx.x * blockDim.x + threadIdx.x), n - 1);
    int v = x[i];
#pragma unroll
    for (int d = 1; d < 4; d <<= 1) {
        int ov = __shfl_xor_sync(0xffffffffu, v, d);
        int oi = __shfl_xor_sync(0xffffffffu, i, d);
        if (ov > v || (ov == v && oi < i)) {
            v = ov;
            i = oi;
        }
    }
    if ((threadIdx.x & 3) == 0 && v > best[0]) {
        best[0] = v;
        where[0] = i;
    }
}
