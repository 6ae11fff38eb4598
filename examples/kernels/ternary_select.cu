// Ternary selects: absolute difference and a collatz step.
__global__ void ternary_select(const int* a, const int* b, int* diff, int* step, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int x = a[i];
        int y = b[i];
        diff[i] = x > y ? x - y : y - x;
        step[i] = (x & 1) ? 3 * x + 1 : x / 2;
    }
}
