// Each thread applies every atomic to words of its own (no contention), so the old
// values returned are fixed: the definitions at their edges (wrap, limit, sign).
__global__ void atomic_edges(unsigned* inc, unsigned* dec, unsigned* lim, int* cas, int* smax, unsigned* umin,
                             int* old) {
    int t = threadIdx.x;
    old[t] = atomicInc(&inc[t], lim[t]);
    old[8 + t] = atomicDec(&dec[t], lim[t]);
    old[16 + t] = atomicCAS(&cas[t], t - 4, 100 + t);
    old[24 + t] = atomicMax(&smax[t], t * 2 - 7);
    old[32 + t] = atomicMin(&umin[t], (unsigned)(t - 4));
}
