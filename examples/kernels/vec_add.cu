// Element-wise add with 32-bit wrap-around.
__global__ void vec_add(const int* a, const int* b, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = (int)((unsigned)a[i] + (unsigned)b[i]);
    }
}
