// Unsigned division and remainder by constant powers of two.
__global__ void div_pow2_unsigned(const unsigned* x, unsigned* q16, unsigned* r16, unsigned* q1k) {
    int i = threadIdx.x;
    unsigned v = x[i];
    q16[i] = v / 16u;
    r16[i] = v % 16u;
    q1k[i] = v / 1024u;
}
