// The full 64-bit products of 32-bit values (clang's mul.wide.s32 and mul.wide.u32):
// (long long)a * b and (unsigned long long)ua * ub, each written as its two words.
__global__ void mulwide64(const int *a, const int *b, unsigned *sp, unsigned *up) {
    int i = threadIdx.x;
    long long s = (long long)a[i] * b[i];
    unsigned long long u = (unsigned long long)(unsigned)a[i] * (unsigned)b[i];
    sp[2 * i] = (unsigned)s;
    sp[2 * i + 1] = (unsigned)(s >> 32);
    up[2 * i] = (unsigned)u;
    up[2 * i + 1] = (unsigned)(u >> 32);
}
