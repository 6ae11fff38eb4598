// Negation and absolute value, including INT_MIN (both give INT_MIN).
__global__ void neg_abs(const int* x, int* neg, int* ab, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int v = x[i];
        unsigned u = (unsigned)v;
        neg[i] = (int)(0u - u);
        ab[i] = v < 0 ? (int)(0u - u) : v;
    }
}
