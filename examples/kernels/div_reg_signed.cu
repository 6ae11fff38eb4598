// Signed division and remainder by a register: truncation toward zero, the remainder
// takes the dividend's sign, INT_MIN / -1 wraps to INT_MIN
__global__ void div_reg_signed(const int* a, const int* b, int* q, int* r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        q[i] = a[i] / b[i];
        r[i] = a[i] % b[i];
    }
}
