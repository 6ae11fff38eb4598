// Sorting, ascending, in place.
//
// One thread block (a single thread for a few elements: fewest VAL tokens): odd-even transposition, n phases; in a phase thread t
// compares and swaps the pairs (i, i + 1) with i = 2t + phase % 2, 2t + phase % 2 +
// 2 blockDim.x, ...; the pairs of a phase are disjoint, a barrier separates the phases.
__global__ void sort(int* x, int n) {
    int t = threadIdx.x;
#pragma unroll 1
    for (int phase = 0; phase < n; phase++) {
#pragma unroll 1
        for (int i = 2 * t + (phase & 1); i + 1 < n; i += 2 * blockDim.x) {
            int a = x[i];
            int b = x[i + 1];
            x[i] = min(a, b);
            x[i + 1] = max(a, b);
        }
        __syncthreads();
    }
}
