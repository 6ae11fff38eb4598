// __syncwarp orders shared memory between the lanes of a warp: each lane writes its
// value, then reads the one 5 lanes further on (16 lanes, four machine warps).
__global__ void warp_syncwarp(const int* x, int* out) {
    __shared__ int s[16];
    int t = threadIdx.x;
    s[t] = x[t] * 3;
    __syncwarp();
    int v = s[(t + 5) % blockDim.x];
    __syncwarp();
    s[t] = v + 1;
    __syncwarp();
    out[t] = s[(t + 1) % blockDim.x];
}
