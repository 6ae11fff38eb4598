// Reverse in place: thread i < n / 2 swaps x[i] and x[n - 1 - i].
__global__ void reverse(int* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (n >> 1)) {
        int j = n - 1 - i;
        int lo = x[i];
        int hi = x[j];
        x[i] = hi;
        x[j] = lo;
    }
}
