// Division and remainder as in C and CUDA: the quotient is truncated toward zero, the
// remainder takes the dividend's sign, INT_MIN / -1 wraps to INT_MIN. One element per
// thread, in place (two 63-element vectors fill the 126 memory words; a scalar operand
// k is bound as an immediate, so one vector can fill them). The machine has no divider:
// the lowering writes each `/` and `%` as a shift-and-subtract routine the model runs,
// and a divisor of 0 stops the launch at that line.
__global__ void div_vv(int* a, const int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] / b[i];
}

__global__ void rem_vv(int* a, const int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] % b[i];
}

// x / k and x % k: a vector by a scalar
__global__ void div_vk(int* x, int k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] / k;
}

__global__ void rem_vk(int* x, int k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] % k;
}

// k / x and k % x: a scalar by each element of a vector
__global__ void div_kv(int* x, int k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = k / x[i];
}

__global__ void rem_kv(int* x, int k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = k % x[i];
}
