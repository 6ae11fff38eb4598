// Dot product with a shuffle reduction: each lane multiplies, two __shfl_down_sync steps sum the warp, lane 0 stores.
__global__ void shfl_dot(const int* a, const int* b, int* out) {
    int t = threadIdx.x;
    int v = a[t] * b[t];
    v += __shfl_down_sync(0xffffffffu, v, 2);
    v += __shfl_down_sync(0xffffffffu, v, 1);
    if (t == 0) out[0] = v;
}
