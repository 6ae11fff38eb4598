// Short conditionals that the compiler may predicate or turn into selects,
// plus a conditional store.
__global__ void predication(const int* x, int* out, int* flag, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    int v = x[i];
    if (v & 1) v += 100;
    if (v < 0) v = 0;
    if (i == 2) v = 7;
    out[i] = v;
    if (v > 50) flag[i] = 1;
}
