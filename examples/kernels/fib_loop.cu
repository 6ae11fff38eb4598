// Fibonacci numbers with per-lane iteration counts; fib(47) and later wrap.
__global__ void fib_loop(const int* n, int* out) {
    int t = threadIdx.x;
    unsigned a = 0, b = 1;
    #pragma unroll 1
    for (int k = 0; k < n[t]; k++) {
        unsigned c = a + b;
        a = b;
        b = c;
    }
    out[t] = (int)a;
}
