// saxpy, the first kernel of every CUDA tutorial: y = a x + y in float32.
// clang contracts a * x[i] + y[i] into one fma.rn.f32 (a single rounding).
__global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
