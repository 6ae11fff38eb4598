// Elementwise a = a (op) b on equal-length vectors, one element per thread, in place so
// that two 63-element vectors fit the 126 memory words. One kernel per operator.
__global__ void add(int* a, const int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] + b[i];
}

__global__ void sub(int* a, const int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] - b[i];
}

__global__ void mul(int* a, const int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * b[i];
}
