// Unsigned division by a runtime power of two (1 << k) and the matching remainder.
__global__ void div_pow2_runtime(const unsigned* x, const int* k, unsigned* q, unsigned* r) {
    int i = threadIdx.x;
    unsigned d = 1u << (k[i] & 31);
    q[i] = x[i] / d;
    r[i] = x[i] % d;
}
