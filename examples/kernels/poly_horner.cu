// Evaluate a polynomial by Horner's rule: a multiply-add loop over a runtime degree.
__global__ void poly_horner(const int* coef, const int* xs, int* out, int ncoef) {
    int t = threadIdx.x;
    unsigned x = (unsigned)xs[t];
    unsigned acc = 0;
    #pragma unroll 1
    for (int k = 0; k < ncoef; k++) {
        acc = acc * x + (unsigned)coef[k];
    }
    out[t] = (int)acc;
}
