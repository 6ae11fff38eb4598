// fminf/fmaxf as PTX defines min/max.f32: a NaN operand gives the other operand (lanes 4
// and 5), two NaNs give NaN (lane 6), and -0 is below +0 (lane 7).
__global__ void float_minmax(const float* a, const float* b, float* lo, float* hi) {
    int i = threadIdx.x;
    float x = a[i], y = b[i];
    if (i == 6) x = __int_as_float(0x7fc00000);
    if (i >= 4 && i <= 6) y = __int_as_float(0x7fc00000);
    if (i == 7) x = -x;
    lo[i] = __builtin_fminf(x, y);
    hi[i] = __builtin_fmaxf(x, y);
}
