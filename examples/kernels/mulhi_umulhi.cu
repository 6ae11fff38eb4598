// The high 32 bits of 64-bit products: signed (__mulhi) and unsigned (__umulhi).
__global__ void mulhi_umulhi(const int* a, const int* b, int* hs, unsigned* hu) {
    int i = threadIdx.x;
    hs[i] = __mulhi(a[i], b[i]);
    hu[i] = __umulhi((unsigned)a[i], (unsigned)b[i]);
}
