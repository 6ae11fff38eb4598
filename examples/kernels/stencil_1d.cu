// Three-point stencil with zero boundaries (bounds checks per lane).
__global__ void stencil_1d(const int* x, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int left = i > 0 ? x[i - 1] : 0;
        int right = i + 1 < n ? x[i + 1] : 0;
        out[i] = left + 2 * x[i] + right;
    }
}
