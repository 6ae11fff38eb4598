// Stream compaction: positive values reserve a slot with atomicAdd. The count is order
// independent; slot assignment follows the machine order (ascending thread index here).
__global__ void atomic_compact(const int* x, int* out, int* count, int n) {
    int t = threadIdx.x;
    if (t < n) {
        int v = x[t];
        if (v > 0) {
            int slot = atomicAdd(count, 1);
            out[slot] = v;
        }
    }
}
