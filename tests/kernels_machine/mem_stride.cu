// 32 threads read one word in every 31 of a 992-word array and write the last 32 of 1,024 words
__global__ void mem_stride(const int* a, int* out) {
    int t = threadIdx.x;
    out[t] = a[31 * t + 7] - t;
}
