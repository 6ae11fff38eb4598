// Exchange values between warps through shared memory: reverse 16 values.
__global__ void shared_reverse(const int* x, int* out) {
    __shared__ int s[16];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    out[t] = s[blockDim.x - 1 - t];
}
