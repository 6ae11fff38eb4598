// Sorting floats, ascending, in place: sort.cu's odd-even transposition (n phases, the
// pairs (i, i + 1) of a phase disjoint, a barrier between phases), a pair swapped where
// x[i + 1] < x[i] as floats compare: -0 and +0 are equal and keep their order, and a NaN
// compares false with everything, so it stays where the phases leave it.
__global__ void sort_f(float* x, int n) {
    int t = threadIdx.x;
#pragma unroll 1
    for (int phase = 0; phase < n; phase++) {
#pragma unroll 1
        for (int i = 2 * t + (phase & 1); i + 1 < n; i += 2 * blockDim.x) {
            float a = x[i];
            float b = x[i + 1];
            if (b < a) {
                x[i] = b;
                x[i + 1] = a;
            }
        }
        __syncthreads();
    }
}
