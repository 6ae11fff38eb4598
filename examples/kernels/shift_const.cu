// Constant shifts: shl, logical shr (unsigned) and arithmetic shr (signed).
__global__ void shift_const(const int* x, int* shl, int* shru, int* shrs, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int v = x[i];
        shl[i] = (int)((unsigned)v << 3);
        shru[i] = (int)((unsigned)v >> 5);
        shrs[i] = v >> 5;
    }
}
