// Unsigned min and max: 0xFFFFFFFF is the largest value.
__global__ void minmax_unsigned(const unsigned* a, const unsigned* b, unsigned* lo, unsigned* hi, int n) {
    int i = threadIdx.x;
    if (i < n) {
        lo[i] = min(a[i], b[i]);
        hi[i] = max(a[i], b[i]);
    }
}
