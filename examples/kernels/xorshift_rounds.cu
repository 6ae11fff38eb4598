// xorshift32: shl, logical shr and xor, iterated a runtime number of rounds.
__global__ void xorshift_rounds(unsigned* state, int rounds) {
    int i = threadIdx.x;
    unsigned x = state[i];
    #pragma unroll 1
    for (int r = 0; r < rounds; r++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    state[i] = x;
}
