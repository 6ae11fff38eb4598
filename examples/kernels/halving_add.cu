// Averages that cannot overflow (__hadd, __rhadd, __uhadd) and the 24-bit product (__mul24).
__global__ void halving_add(const int* a, const int* b, int* h, int* rh, unsigned* uh, int* m24) {
    int i = threadIdx.x;
    h[i] = __hadd(a[i], b[i]);
    rh[i] = __rhadd(a[i], b[i]);
    uh[i] = __uhadd((unsigned)a[i], (unsigned)b[i]);
    m24[i] = __mul24(a[i], b[i]);
}
