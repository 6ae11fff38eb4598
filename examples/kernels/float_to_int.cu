// float -> int conversions at their edges, as C's cast and CUDA's intrinsics define them:
// truncation (cvt.rzi), round to nearest even (__float2int_rn), floor and ceiling rounding
// (__float2int_rd / _ru), saturating out of range, and NaN to 0.
__global__ void float_to_int(const float* x, int* trunc, int* nearest, int* down, int* up) {
    int i = threadIdx.x;
    trunc[i] = (int)x[i];
    nearest[i] = __float2int_rn(x[i]);
    down[i] = __float2int_rd(x[i]);
    up[i] = __float2int_ru(x[i]);
}
