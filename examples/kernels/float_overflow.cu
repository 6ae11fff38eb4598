// Overflow to infinity: x * 1e30f * 1e8f passes the largest float for large x (a product
// rounds to infinity, a sum of two large floats too), and the infinity stays infinite.
__global__ void float_overflow(const float* x, float* big, float* back) {
    int i = threadIdx.x;
    float v = x[i] * 1e30f * 1e8f;
    big[i] = v;
    back[i] = v + v;
}
