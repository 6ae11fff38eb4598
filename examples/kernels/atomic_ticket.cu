// Each thread takes a ticket (the old counter value). The order follows the machine's
// schedule: lowest warp first, lanes in ascending order, so ticket == threadIdx.x here.
__global__ void atomic_ticket(int* counter, int* out) {
    int t = threadIdx.x;
    out[t] = atomicAdd(counter, 1);
}
