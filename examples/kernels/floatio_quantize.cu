// Quantize floats to integers and back: k = round-to-nearest-even(x * scale), then
// k * step. The product rounds once to float32 before the conversion (no fma: nothing
// is added), and k converts back exactly (|k| < 2^24).
__global__ void quantize(const float* x, float scale, float step, int* q, float* back) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = __float2int_rn(x[i] * scale);
    q[i] = k;
    back[i] = (float)k * step;
}
