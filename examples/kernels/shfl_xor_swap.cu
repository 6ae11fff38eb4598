// Butterfly exchanges with lane masks 1, 2 and 3.
__global__ void shfl_xor_swap(const int* x, int* x1, int* x2, int* x3) {
    int t = threadIdx.x;
    int v = x[t];
    x1[t] = __shfl_xor_sync(0xffffffffu, v, 1);
    x2[t] = __shfl_xor_sync(0xffffffffu, v, 2);
    x3[t] = __shfl_xor_sync(0xffffffffu, v, 3);
}
