// Butterfly all-reduce with __shfl_xor_sync by 2 and 1: every lane gets the max and sum
// of its group of 4 lanes.
__global__ void shfl_xor_allreduce(const int* x, int* mx, int* sm) {
    int t = threadIdx.x;
    int m = x[t];
    int s = m;
    for (int d = 2; d > 0; d >>= 1) {
        m = max(m, __shfl_xor_sync(0xffffffffu, m, d));
        s += __shfl_xor_sync(0xffffffffu, s, d);
    }
    mx[t] = m;
    sm[t] = s;
}
