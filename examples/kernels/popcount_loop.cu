// Count set bits with a per-lane loop (trip count = position of the highest set bit).
__global__ void popcount_loop(const unsigned* x, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        unsigned v = x[i];
        int c = 0;
        while (v != 0) {
            c += (int)(v & 1u);
            v >>= 1;
        }
        out[i] = c;
    }
}
