// Dot product: each thread multiplies one pair and atomically adds it into out[0].
__global__ void dot(const int* a, const int* b, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        atomicAdd(out, a[i] * b[i]);
    }
}
