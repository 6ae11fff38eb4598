// Lowest-set-bit tricks: clear it (x & (x-1)), isolate it (x & -x), fill below it (x | (x-1)).
__global__ void bit_tricks(const int* x, int* clear_low, int* low_bit, int* fill_low, int n) {
    int i = threadIdx.x;
    if (i < n) {
        unsigned v = (unsigned)x[i];
        clear_low[i] = (int)(v & (v - 1u));
        low_bit[i] = (int)(v & (0u - v));
        fill_low[i] = (int)(v | (v - 1u));
    }
}
