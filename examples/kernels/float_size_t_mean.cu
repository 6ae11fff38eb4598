// Row means of a matrix whose sizes are size_t: each thread sums its row in order and
// divides by the 64-bit column count (cvt.rn.f32.u64, then a correctly rounded division).
__global__ void float_size_t_mean(const float* x, float* mean, size_t rows, size_t cols) {
    size_t row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float s = 0.0f;
        #pragma unroll 1
        for (size_t j = 0; j < cols; j++)
            s += x[row * cols + j];
        mean[row] = s / cols;
    }
}
