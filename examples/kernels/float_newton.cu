// Newton's iteration for a square root, one value per thread: x = (x + a / x) * 0.5f,
// six times from x = a (add, divide and multiply, each rounded to float32).
__global__ void float_newton(const float* a, float* root) {
    int i = threadIdx.x;
    float x = a[i];
#pragma unroll 1
    for (int k = 0; k < 6; k++) x = (x + a[i] / x) * 0.5f;
    root[i] = x;
}
