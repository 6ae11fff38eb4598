// Bounded collatz: per-lane trip counts, stops at 1 or after limit steps.
__global__ void collatz_steps(const unsigned* x, int* out, int limit) {
    int t = threadIdx.x;
    unsigned v = x[t];
    int steps = 0;
    while (v != 1u && steps < limit) {
        if (v & 1u) v = 3u * v + 1u;
        else v >>= 1;
        steps++;
    }
    out[t] = steps;
}
