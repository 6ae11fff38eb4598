// All 16 threads atomically add into the same words.
__global__ void atomic_contention(int* out) {
    int t = threadIdx.x;
    atomicAdd(&out[0], t + 1);
    atomicAdd(&out[1], 1);
    atomicAdd(&out[2], -t);
}
