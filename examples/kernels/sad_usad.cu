// Sums of absolute differences: __sad (signed) and __usad (unsigned) of two vectors,
// each lane adding its difference to a running total passed in.
__global__ void sad_usad(const int* a, const int* b, const unsigned* acc, unsigned* s, unsigned* u) {
    int i = threadIdx.x;
    s[i] = __sad(a[i], b[i], acc[i]);
    u[i] = __usad((unsigned)a[i], (unsigned)b[i], acc[i]);
}
