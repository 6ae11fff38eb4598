// A polynomial by Horner's rule, one x per thread: p = p * x + c[k] is one fma per
// coefficient (highest first), each rounded once.
__global__ void float_horner(const float* c, const float* x, float* p, int degree) {
    int i = threadIdx.x;
    float acc = c[0];
#pragma unroll 1
    for (int k = 1; k <= degree; k++) acc = acc * x[i] + c[k];
    p[i] = acc;
}
