// The output array sits at the top of memory: its last element is the machine's last word.
__global__ void mem_top(const int* x, int* out, int n) {
    int t = threadIdx.x;
    out[t] = x[t] * 5 - x[n - 1 - t];
    atomicAdd(&out[3], 1);
}
