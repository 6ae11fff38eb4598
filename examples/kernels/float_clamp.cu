// Scale then clamp to [lo, hi] with fminf/fmaxf (PTX's min/max: a NaN gives the other operand).
__global__ void float_clamp(const float* x, float* y, float lo, float hi) {
    int i = threadIdx.x;
    y[i] = __builtin_fminf(__builtin_fmaxf(x[i] * 0.37f, lo), hi);
}
