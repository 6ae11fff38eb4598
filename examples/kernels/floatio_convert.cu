// float <-> int conversions as CUDA defines them: (int)f truncates, __float2int_rn rounds
// to nearest even, __float2int_rd rounds down, (unsigned)f saturates at 0 and 2^32 - 1;
// every float -> int conversion gives 0 for NaN and the range's end past it. (float)i
// rounds to nearest even (2^24 + 1 is not a float), __uint2float_rz toward zero; floorf,
// ceilf, truncf and rintf round to an integral float, keeping -0.0 and NaN.
__global__ void conversions(const float* x, const int* n, int* toint, float* tofloat, float* rounded) {
    int i = threadIdx.x;
    float v = x[i];
    toint[4 * i] = (int)v;
    toint[4 * i + 1] = __float2int_rn(v);
    toint[4 * i + 2] = __float2int_rd(v);
    toint[4 * i + 3] = (int)(unsigned)v;
    tofloat[2 * i] = (float)n[i];
    tofloat[2 * i + 1] = __uint2float_rz((unsigned)n[i]);
    rounded[4 * i] = floorf(v);
    rounded[4 * i + 1] = ceilf(v);
    rounded[4 * i + 2] = truncf(v);
    rounded[4 * i + 3] = rintf(v);
}
