// __ballot_sync, __any_sync, __all_sync and __activemask over a 12-thread warp, checked
// without a popcount: each lane finds its own bit in the ballot, and a loop counts bits.
__global__ void warp_votes(const int* x, unsigned* ballot, int* mine, int* count, int* any_big,
                           int* all_nonzero, unsigned* active) {
    int t = threadIdx.x;
    unsigned b = __ballot_sync(0xffffffff, x[t] > 0);
    ballot[t] = b;
    mine[t] = (b >> t) & 1;
    int n = 0;
    for (unsigned r = b; r != 0; r &= r - 1) n++;
    count[t] = n;
    any_big[t] = __any_sync(0xffffffff, x[t] > 100);
    all_nonzero[t] = __all_sync(0xffffffff, x[t] != 0) + 2 * __all_sync(0xffffffff, x[t] > -1000);
    active[t] = __activemask();
}
