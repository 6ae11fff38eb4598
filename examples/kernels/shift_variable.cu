// Shifts by per-lane amounts in 0..31.
__global__ void shift_variable(const int* x, const int* s, int* shl, int* shru, int* shrs, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int v = x[i];
        int k = s[i] & 31;
        shl[i] = (int)((unsigned)v << k);
        shru[i] = (int)((unsigned)v >> k);
        shrs[i] = v >> k;
    }
}
