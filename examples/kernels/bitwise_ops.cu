// and / or / xor / not, four results per lane packed into out.
__global__ void bitwise_ops(const int* a, const int* b, int* out) {
    int i = threadIdx.x;
    int x = a[i];
    int y = b[i];
    out[4 * i + 0] = x & y;
    out[4 * i + 1] = x | y;
    out[4 * i + 2] = x ^ y;
    out[4 * i + 3] = ~x;
}
