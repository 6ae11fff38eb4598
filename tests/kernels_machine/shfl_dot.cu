// Dot product with a shuffle reduction: each lane multiplies, two __shfl_down_sync steps in 4-lane segments sum the block, lane 0 stores.
__global__ void shfl_dot(const int* a, const int* b, int* out) {
    int t = threadIdx.x;
    int v = a[t] * b[t];
    v += __shfl_down_sync(0xffffffffu, v, 2, 4);
    v += __shfl_down_sync(0xffffffffu, v, 1, 4);
    if (t == 0) out[0] = v;
}
