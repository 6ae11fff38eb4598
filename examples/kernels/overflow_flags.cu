// Detect signed overflow and unsigned carry of a 32-bit add.
__global__ void overflow_flags(const int* a, const int* b, int* sum, int* flags, int n) {
    int i = threadIdx.x;
    if (i < n) {
        unsigned x = (unsigned)a[i];
        unsigned y = (unsigned)b[i];
        unsigned s = x + y;
        int ovf = (int)(((x ^ s) & (y ^ s)) >> 31);
        int carry = s < x ? 1 : 0;
        sum[i] = (int)s;
        flags[i] = ovf | (carry << 1);
    }
}
