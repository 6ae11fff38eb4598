// Accumulate until a per-lane threshold is exceeded, then break; records iterations.
__global__ void countdown_break(const int* step, int* acc, int* iters, int limit, int n) {
    int t = threadIdx.x;
    int a = 0;
    int k = 0;
    while (k < n) {
        a += step[t];
        k++;
        if (a > limit) break;
    }
    acc[t] = a;
    iters[t] = k;
}
