// Nested divergent if/else on lane bits, with different side effects per path.
__global__ void nested_branches(const int* x, int* out, int* cnt) {
    int t = threadIdx.x;
    int v = x[t];
    if (t & 1) {
        if (t & 2) {
            out[t] = v * 2;
        } else {
            atomicAdd(&cnt[0], v);
        }
    } else {
        if (v > 0) {
            out[t] = v - 1;
            atomicAdd(&cnt[1], 1);
        } else {
            if (t < 4) out[t] = -v;
            else atomicAdd(&cnt[2], v);
        }
    }
}
