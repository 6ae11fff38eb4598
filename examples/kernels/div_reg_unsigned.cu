// Unsigned division and remainder by a register, dividends and divisors above 2^31 included
__global__ void div_reg_unsigned(const unsigned* a, const unsigned* b, unsigned* q, unsigned* r, int n) {
    int i = threadIdx.x;
    if (i < n) {
        q[i] = a[i] / b[i];
        r[i] = a[i] % b[i];
    }
}
