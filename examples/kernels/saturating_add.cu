// Signed saturating add: overflow detection then a select.
__global__ void saturating_add(const int* a, const int* b, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int x = a[i];
        int y = b[i];
        int s = (int)((unsigned)x + (unsigned)y);
        bool ovf = ((x ^ s) & (y ^ s)) < 0;
        out[i] = ovf ? (x < 0 ? (int)0x80000000u : 0x7fffffff) : s;
    }
}
