// Absolute value in place, one element per thread; abs(INT_MIN) wraps to INT_MIN, as
// CUDA's abs() and the machine's abs.s32 do (like -x does for INT_MIN).
__global__ void abs_(int* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = abs(x[i]);
}
