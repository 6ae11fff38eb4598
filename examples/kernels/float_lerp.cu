// Linear interpolation a + t * (b - a), one value per thread (clang contracts the product
// and the add into one fma: the difference rounded, then t * d + a rounded once).
__global__ void float_lerp(const float* a, const float* b, float t, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + t * (b[i] - a[i]);
}
