// A long straight program: a fully unrolled loop of data-dependent steps (100+ blocks)
__global__ void long_program(const int* a, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int v = a[i], acc = 0;
#pragma unroll
        for (int k = 0; k < 24; k++) {
            if (v & 1) acc += v * (k + 1);
            else acc -= v >> 1;
            v = (v >> 1) ^ (acc & 7);
        }
        out[i] = acc;
    }
}
