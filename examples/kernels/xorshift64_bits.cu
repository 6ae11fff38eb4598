// xorshift64* (Marsaglia, Vigna): each thread steps its 64-bit state `rounds` times
// (shifts by constants and xors), then writes the multiplied output's two words and
// the state's population count, leading zeros and lowest set bit (__popcll, __clzll, __ffsll).
__global__ void xorshift64_bits(const unsigned *seed, unsigned *out, int *bits, int rounds) {
    int t = threadIdx.x;
    unsigned long long x = (unsigned long long)seed[t] << 32 | (seed[t] ^ 0x9E3779B9u);
    for (int k = 0; k < rounds; k++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
    }
    unsigned long long r = x * 0x2545F4914F6CDD1DULL;
    out[2 * t] = (unsigned)r;
    out[2 * t + 1] = (unsigned)(r >> 32);
    bits[3 * t] = __popcll(x);
    bits[3 * t + 1] = __clzll(x);
    bits[3 * t + 2] = __ffsll(x);
}
