// Reverse the low nbits bits of each value with a loop over a runtime count.
__global__ void bit_reverse_loop(const unsigned* x, unsigned* out, int nbits) {
    int i = threadIdx.x;
    unsigned v = x[i];
    unsigned r = 0;
    #pragma unroll 1
    for (int k = 0; k < nbits; k++) {
        r = (r << 1) | (v & 1u);
        v >>= 1;
    }
    out[i] = r;
}
