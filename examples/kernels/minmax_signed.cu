// Signed min and max at the 32-bit edges.
__global__ void minmax_signed(const int* a, const int* b, int* lo, int* hi, int n) {
    int i = threadIdx.x;
    if (i < n) {
        lo[i] = min(a[i], b[i]);
        hi[i] = max(a[i], b[i]);
    }
}
