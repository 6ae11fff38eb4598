// |a - b| on unsigned values with a ternary select on an unsigned comparison.
__global__ void abs_diff_unsigned(const unsigned* a, const unsigned* b, unsigned* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        unsigned x = a[i];
        unsigned y = b[i];
        out[i] = x > y ? x - y : y - x;
    }
}
