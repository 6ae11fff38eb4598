// c[i] = a[i] + 3 b[i] over 341 elements: a grid of 11 blocks of 32 threads (the large machine)
__global__ void grid_add_big(const int* a, const int* b, int* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + 3 * b[i];
}
