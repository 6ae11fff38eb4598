// Multiplication keeps the low 32 bits.
__global__ void mul_wrap(const unsigned* a, const unsigned* b, unsigned* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        out[i] = a[i] * b[i];
    }
}
