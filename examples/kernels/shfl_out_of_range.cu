// Up/down shuffles whose source lane is below lane 0 or does not exist (an 8-thread
// block) keep the lane's own value.
__global__ void shfl_out_of_range(const int* x, int* up1, int* up3, int* down1, int* down2) {
    int t = threadIdx.x;
    int v = x[t];
    up1[t] = __shfl_up_sync(0xffffffffu, v, 1);
    up3[t] = __shfl_up_sync(0xffffffffu, v, 3);
    down1[t] = __shfl_down_sync(0xffffffffu, v, 1);
    down2[t] = __shfl_down_sync(0xffffffffu, v, 2);
}
