// Signed char arithmetic: each byte doubled with saturation to [-128, 127], and its sign.
__global__ void signed_char_clamp(const signed char* x, signed char* twice, char* sign) {
    int i = threadIdx.x;
    int v = 2 * x[i];
    twice[i] = (signed char)(v > 127 ? 127 : v < -128 ? -128 : v);
    sign[i] = (char)((x[i] > 0) - (x[i] < 0));
}
