// Signed division and remainder by constants (clang writes them as mul.hi): q = a / 7, r = a % 7, s = a / -3
__global__ void div_const_signed(const int* a, int* q, int* r, int* s, int n) {
    int i = threadIdx.x;
    if (i < n) {
        q[i] = a[i] / 7;
        r[i] = a[i] % 7;
        s[i] = a[i] / -3;
    }
}
