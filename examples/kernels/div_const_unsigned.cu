// Unsigned division and remainder by constants: the low decimal digit and the rest
__global__ void div_const_unsigned(const unsigned* a, unsigned* q, unsigned* r, int n) {
    int i = threadIdx.x;
    if (i < n) {
        q[i] = a[i] / 10u;
        r[i] = a[i] % 10u;
    }
}
