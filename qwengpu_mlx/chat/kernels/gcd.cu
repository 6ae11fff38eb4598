// gcd(a, b) of the absolute values, by binary gcd (shifts and subtractions, no division):
// at most about 64 loop turns for 32-bit inputs. One thread.
__global__ void gcd(int* out, int a, int b) {
    unsigned u = a < 0 ? 0u - (unsigned)a : (unsigned)a;
    unsigned v = b < 0 ? 0u - (unsigned)b : (unsigned)b;
    unsigned shift = 0;
    if (u == 0 || v == 0) {
        out[0] = (int)(u | v);
        return;
    }
#pragma unroll 1
    while (((u | v) & 1) == 0) {
        u >>= 1;
        v >>= 1;
        shift++;
    }
#pragma unroll 1
    while ((u & 1) == 0) u >>= 1;
#pragma unroll 1
    do {
#pragma unroll 1
        while ((v & 1) == 0) v >>= 1;
        unsigned lo = min(u, v);
        v = max(u, v) - lo;
        u = lo;
    } while (v != 0);
    out[0] = (int)(u << shift);
}
