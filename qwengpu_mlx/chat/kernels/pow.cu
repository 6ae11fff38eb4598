// pow(base, e) for e >= 0 by square-and-multiply over e's bits, wrapping (the host allows
// only results that fit 32 bits). One thread; one loop turn per bit of e.
__global__ void pow_(int* out, int base, int e) {
    unsigned result = 1;
    unsigned square = (unsigned)base;
#pragma unroll 1
    for (unsigned k = (unsigned)e; k != 0; k >>= 1) {
        if (k & 1) result *= square;
        square *= square;
    }
    out[0] = (int)result;
}
