// A ring buffer's write index with atomicInc (0, 1, ..., limit, then 0 again) and a
// countdown with atomicDec (down to 0, then back to limit). Any serial order hands out
// the same indices, so the slots' hit counts are fixed.
__global__ void atomic_inc_ring(unsigned* ring, int* up, int* down, unsigned limit) {
    unsigned k = atomicInc(&ring[0], limit);
    atomicAdd(&up[k], 1);
    unsigned d = atomicDec(&ring[1], limit);
    atomicAdd(&down[d], 1);
}
