// Floats to 32.32 fixed point in 64-bit integers ((long long)(x * 2^32): cvt.rzi.s64.f32, saturating
// as PTX says, NaN 0), written out as two words, and the 64-bit value back to a float.
__global__ void float_fixed64(const float* x, int* lo, int* hi, float* back) {
    int i = threadIdx.x;
    long long q = (long long)(x[i] * 4294967296.0f);
    lo[i] = (int)q;
    hi[i] = (int)(q >> 32);
    back[i] = (float)(q >> 16);
}
