// 4x4 transpose through shared memory (16 threads).
__global__ void shared_transpose(const int* in, int* out) {
    __shared__ int tile[16];
    int t = threadIdx.x;
    tile[t] = in[t];
    __syncthreads();
    int r = t / 4;
    int c = t % 4;
    out[t] = tile[c * 4 + r];
}
