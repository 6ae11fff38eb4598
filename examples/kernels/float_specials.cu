// Infinities, NaNs and comparisons: x * inf is +-inf (NaN for x = 0), inf - inf is NaN,
// and an ordered comparison with a NaN is false.
__global__ void float_specials(const float* x, float* y, int* flags) {
    int i = threadIdx.x;
    float inf = __int_as_float(0x7f800000);
    float v = x[i] * inf;
    y[i] = v - inf;
    flags[i] = (x[i] < 2.5f) + 2 * (v != v) + 4 * (y[i] >= 0.0f);
}
