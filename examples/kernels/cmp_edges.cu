// Signed versus unsigned comparisons at the 32-bit edges, packed as a bit mask.
__global__ void cmp_edges(const int* a, const int* b, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int x = a[i];
        int y = b[i];
        unsigned ux = (unsigned)x;
        unsigned uy = (unsigned)y;
        int m = 0;
        if (x < y) m |= 1;
        if (ux < uy) m |= 2;
        if (x <= y) m |= 4;
        if (ux <= uy) m |= 8;
        if (x > y) m |= 16;
        if (ux > uy) m |= 32;
        if (x >= y) m |= 64;
        if (ux >= uy) m |= 128;
        if (x == y) m |= 256;
        if (x != y) m |= 512;
        out[i] = m;
    }
}
