// The sum of the decimal digits of each element (of its magnitude)
__global__ void digit_sum(const int* a, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        unsigned v = a[i] < 0 ? 0u - (unsigned)a[i] : (unsigned)a[i];
        int s = 0;
        while (v != 0) {
            s += v % 10u;
            v /= 10u;
        }
        out[i] = s;
    }
}
