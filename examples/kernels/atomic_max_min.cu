// Per-bin maximum and minimum of values spread over two thread blocks of two warps:
// atomicMax/atomicMin on int words (signed) and atomicMax on unsigned words.
__global__ void atomic_max_min(const int* data, int* hi, int* lo, unsigned* uhi, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = data[i];
        atomicMax(&hi[i & 3], v);
        atomicMin(&lo[i & 3], v);
        atomicMax(&uhi[i & 1], (unsigned)v);
    }
}
