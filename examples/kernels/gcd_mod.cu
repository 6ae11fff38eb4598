// Euclid's algorithm with remainders: gcd of each pair (of their magnitudes)
__global__ void gcd_mod(const int* a, const int* b, int* g, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int x = a[i] < 0 ? -a[i] : a[i], y = b[i] < 0 ? -b[i] : b[i];
        while (y != 0) {
            int t = x % y;
            x = y;
            y = t;
        }
        g[i] = x;
    }
}
