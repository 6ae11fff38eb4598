// A tree sum in shared memory across the 4 warps of a 16-thread block, a barrier per level
// in a loop: warp 3 stores the four values, warp 0 adds them (divergent: t < stride) while
// warps 1..3 wait at each barrier. reduce_shared_tree's code paths (store, barrier, a loop
// of divergent shared adds with a barrier each time round, one lane writes the result) in
// about half its launch tokens.
__global__ void reduce_tree_4warps(const int* x, int* out) {
    __shared__ int s[4];
    int t = threadIdx.x;
    if (t >= 12) s[t - 12] = x[t - 12];
    __syncthreads();
    #pragma unroll 1
    for (int stride = 2; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) out[0] = s[0];
}
