// A histogram in shared memory: each bin counts its values with atomicAdd and records
// which threads hit it as bits set with atomicOr; the first 8 threads copy it out.
__global__ void atomic_shared_hist(const int* data, int* counts, unsigned* who) {
    __shared__ int c[8];
    __shared__ unsigned w[8];
    int t = threadIdx.x;
    if (t < 8) {
        c[t] = 0;
        w[t] = 0;
    }
    __syncthreads();
    int b = data[t] & 7;
    atomicAdd(&c[b], 1);
    atomicOr(&w[b], 1u << t);
    __syncthreads();
    if (t < 8) {
        counts[t] = c[t];
        who[t] = w[t];
    }
}
