// Division and remainder of short values: the tens digit (`x % 100 / 10`, which clang
// computes in 8 and 16 bits), and a short quotient and remainder by 7 stored as shorts.
__global__ void digits_short(const short* x, int* tens, short* q, short* r) {
    int i = threadIdx.x;
    short v = x[i];
    tens[i] = v % 100 / 10;
    q[i] = v / 7;
    r[i] = v % 7;
}
