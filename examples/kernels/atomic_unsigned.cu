// atomicAdd on unsigned words wraps around like any add.
__global__ void atomic_unsigned(unsigned* acc, const unsigned* x) {
    int t = threadIdx.x;
    atomicAdd(&acc[0], x[t]);
    atomicAdd(&acc[1], 0xffffffffu);
}
