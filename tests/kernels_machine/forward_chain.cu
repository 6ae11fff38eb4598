// xorshift32 rounds: each step's result feeds the next instruction (forwarded within a block).
__global__ void forward_chain(unsigned* state, int rounds) {
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
