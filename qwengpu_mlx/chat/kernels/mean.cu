// The integer mean, sum / n truncated toward zero (C division), in one thread block:
// each thread adds its elements (every blockDim.x-th) into out[0] (bound to 0), a
// barrier waits for all of them, then thread 0 divides. One block, because a barrier
// spans a block and the division must come after every addition; the caller keeps the
// sum within 32 bits. out doubles as the accumulator: no __shared__ word is spent.
__global__ void mean(const int* x, int* out, int n) {
    for (int k = threadIdx.x; k < n; k += blockDim.x) atomicAdd(out, x[k]);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = out[0] / n;
}
