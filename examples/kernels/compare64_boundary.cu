// 64-bit comparisons across the 2^32 boundary: v = hi * 2^32 + lo against 2^32 + k,
// unsigned (below, equal, above) and signed (v as long long is negative when hi's top bit is set).
__global__ void compare64_boundary(const unsigned *hi, const unsigned *lo, int *order, int *negative, unsigned k) {
    int i = threadIdx.x;
    unsigned long long v = (unsigned long long)hi[i] << 32 | lo[i];
    unsigned long long limit = (1ULL << 32) + k;
    order[i] = v < limit ? -1 : (v == limit ? 0 : 1);
    negative[i] = (long long)v < 0;
}
