// Open addressing with atomicCAS: each thread claims a free (-1) slot of a shared table,
// probing from its hash; then every slot's owner is counted once per thread.
__global__ void atomic_cas_claim(int* owned, int* probes) {
    __shared__ int table[16];
    int t = threadIdx.x;
    table[t] = -1;
    __syncthreads();
    int k = (t * 5) & 7;
    int tries = 1;
    while (atomicCAS(&table[k], -1, t) != -1) {
        k = (k + 1) & 15;
        tries++;
    }
    __syncthreads();
    atomicAdd(&owned[table[t]], 1);
    atomicAdd(&probes[0], tries);
}
