// Products that land among the subnormals (below 2^-126) and sums that cancel.
__global__ void float_tiny(const float* x, float* small, float* diff) {
    int i = threadIdx.x;
    small[i] = x[i] * 1.0e-42f;
    diff[i] = (x[i] + 0.1f) - x[i];
}
