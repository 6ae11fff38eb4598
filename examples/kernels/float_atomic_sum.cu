// A float sum by atomicAdd: thread i adds x[i] to sum[0] and keeps the value it replaced.
// The adds happen one after another (on a GPU in an order it picks; on this machine warps
// in turn, lanes in ascending order), each rounded to float32, so the order shows in the
// sum: past 2^24 an added 1 is a tie that rounds to even.
__global__ void float_atomic_sum(const float* x, float* sum, float* olds, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) olds[i] = atomicAdd(sum, x[i]);
}
