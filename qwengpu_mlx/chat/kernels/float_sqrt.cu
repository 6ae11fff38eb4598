// sqrtf elementwise: sqrt.rn.f32, correctly rounded (no fast-math); sqrt of a negative
// number is NaN, as on a GPU. sqrt_f: in place on floats; sqrt_i: of integers, converted
// by the kernel ((float), cvt.rn.f32.s32) into `out`.
__global__ void sqrt_f(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = sqrtf(x[i]);
}

__global__ void sqrt_i(const int* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = sqrtf((float)x[i]);
}
