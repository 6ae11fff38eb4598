// Odd-even transposition sort of blockDim values in shared memory. Each thread writes
// only its own slot (it keeps the min or max of itself and its partner), so no thread
// relies on re-reading a slot another thread wrote into its own place.
__global__ void odd_even_sort(int* x) {
    __shared__ int s[8];
    int t = threadIdx.x;
    int n = blockDim.x;
    s[t] = x[t];
    __syncthreads();
#pragma unroll 1
    for (int phase = 0; phase < n; phase++) {
        int v = s[t];
        int partner = ((t & 1) == (phase & 1)) ? t + 1 : t - 1;
        if (partner >= 0 && partner < n) {
            int o = s[partner];
            v = t < partner ? min(v, o) : max(v, o);
        }
        __syncthreads();
        s[t] = v;
        __syncthreads();
    }
    x[t] = s[t];
}
