// gcd by repeated subtraction: a data-dependent branch inside a per-lane loop.
__global__ void gcd_sub(const int* a, const int* b, int* out) {
    int t = threadIdx.x;
    int x = a[t];
    int y = b[t];
    while (x != y) {
        if (x > y) x -= y;
        else y -= x;
    }
    out[t] = x;
}
