// Population count, leading zeros and first set bit of each word (__popc, __clz, __ffs).
__global__ void popc_clz(const unsigned* x, int* pop, int* lead, int* first) {
    int i = threadIdx.x;
    unsigned v = x[i];
    pop[i] = __popc(v);
    lead[i] = __clz(v);
    first[i] = __ffs(v);
}
