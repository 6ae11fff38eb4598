// Scaling x = k * x in place, one element per thread (k is bound as an immediate).
__global__ void scale(int* x, int k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = k * x[i];
}
