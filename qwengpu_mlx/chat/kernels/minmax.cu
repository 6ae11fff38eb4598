// Minimum / maximum, one element per thread: a warp combines its 4 lanes with xor
// shuffles, then lane 0 folds the warp's result into out[0] (bound to x[0]). The fold
// is a plain read-modify-write: on this machine warps without barriers run one after
// another, thread blocks too (docs/MACHINE.md, "Scheduling"), so no two folds overlap.
// Lanes past n read x[n - 1], which changes no minimum or maximum.
__global__ void min_(const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[min(i, n - 1)];
    v = min(v, __shfl_xor_sync(0xffffffffu, v, 1));
    v = min(v, __shfl_xor_sync(0xffffffffu, v, 2));
    if ((threadIdx.x & 3) == 0) out[0] = min(out[0], v);
}

__global__ void max_(const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[min(i, n - 1)];
    v = max(v, __shfl_xor_sync(0xffffffffu, v, 1));
    v = max(v, __shfl_xor_sync(0xffffffffu, v, 2));
    if ((threadIdx.x & 3) == 0) out[0] = max(out[0], v);
}
