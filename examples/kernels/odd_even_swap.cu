// Odd-even transposition sort where the active thread swaps both slots of its pair, so a
// thread later reads its own slot after a neighbour wrote it. This needs __syncthreads()
// to act as a memory barrier for the compiler too (no shared value kept in a register
// across it).
__global__ void odd_even_swap(int* x) {
    __shared__ int s[8];
    int t = threadIdx.x;
    int n = blockDim.x;
    s[t] = x[t];
    __syncthreads();
    for (int phase = 0; phase < n; phase++) {
        if ((t & 1) == (phase & 1) && t + 1 < n) {
            int a = s[t];
            int b = s[t + 1];
            if (a > b) {
                s[t] = b;
                s[t + 1] = a;
            }
        }
        __syncthreads();
    }
    x[t] = s[t];
}
