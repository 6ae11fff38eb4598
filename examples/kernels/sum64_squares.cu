// Each thread sums the squares of its strided elements in a long long (the squares of
// values near 100000 pass 2^32), and writes the sum as its low and high words.
__global__ void sum64_squares(const int *a, unsigned *out, size_t n) {
    long long s = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        s += (long long)a[i] * a[i];
    out[2 * threadIdx.x] = (unsigned)s;
    out[2 * threadIdx.x + 1] = (unsigned)(s >> 32);
}
