// Signed division and remainder by powers of two round toward zero.
__global__ void div_pow2_signed(const int* x, int* q4, int* r4, int* q8, int* r2) {
    int i = threadIdx.x;
    int v = x[i];
    q4[i] = v / 4;
    r4[i] = v % 4;
    q8[i] = v / 8;
    r2[i] = v % 2;
}
