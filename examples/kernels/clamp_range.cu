// Clamp into [lo, hi] with nested min/max.
__global__ void clamp_range(const int* x, int* out, int lo, int hi, int n) {
    int i = threadIdx.x;
    if (i < n) {
        out[i] = min(max(x[i], lo), hi);
    }
}
