// A maximum built from atomicCAS, as CUDA code writes it for types with no atomicMax:
// retry while the word is below v and another thread changed it first.
__device__ int cas_max(int* p, int v) {
    int old = *p;
    while (old < v) {
        int seen = atomicCAS(p, old, v);
        if (seen == old) break;
        old = seen;
    }
    return old;
}

__global__ void atomic_cas_max(const int* data, int* best, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) cas_max(&best[i & 1], data[i]);
}
