// A warp sum over an 8-thread block: __shfl_down_sync by blockDim.x / 2, ..., 1 (runtime
// offsets). Lane 0's sum reads only lanes that exist; it alone is written.
__global__ void warp_reduce_down8(const int* x, int* sum) {
    int v = x[threadIdx.x];
    for (unsigned o = blockDim.x / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) sum[0] = v;
}
