// Integer axpy: out = alpha * x + y (a multiply-add per lane).
__global__ void saxpy_int(int alpha, const int* x, const int* y, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        out[i] = (int)((unsigned)alpha * (unsigned)x[i] + (unsigned)y[i]);
    }
}
