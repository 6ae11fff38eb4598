// Warp and lane ids from threadIdx with warpSize (== 32, as on every NVIDIA GPU).
__global__ void lane_warp_ids(int* out) {
    int t = threadIdx.x;
    int warp = t / warpSize;
    int lane = t % warpSize;
    out[t] = warp * 100 + lane * 10 + blockDim.x;
}
