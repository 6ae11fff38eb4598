// Bit reversal and byte permutations: __brev, a byte swap and an interleave of two words.
__global__ void brev_byte_perm(const unsigned* x, const unsigned* y, unsigned* rev, unsigned* swap,
                               unsigned* mix) {
    int i = threadIdx.x;
    rev[i] = __brev(x[i]);
    swap[i] = __byte_perm(x[i], 0, 0x0123);
    mix[i] = __byte_perm(x[i], y[i], 0x5140);
}
