// fib(n) for 0 <= n < 64 by fast doubling over n's 6 bits, high to low (6 loop turns; a
// rolled loop, since clang's unrolled form needs bfe, which the machine lacks).
// With (a, b) = (F(k), F(k+1)): F(2k) = a (2b - a), F(2k+1) = a^2 + b^2. Wrapping
// arithmetic is exact modulo 2^32, and the host allows only n <= 46 (F(46) < 2^31).
__global__ void fib(int* out, int n) {
    unsigned a = 0, b = 1;
    unsigned bits = (unsigned)n << 26;  // n's bit 5 in the sign bit, then bit 4, ...
#pragma unroll 1
    for (int turn = 0; turn < 6; turn++) {
        unsigned c = a * (2 * b - a);
        unsigned d = a * a + b * b;
        bool odd = (int)bits < 0;
        bits <<= 1;
        a = odd ? d : c;
        b = odd ? c + d : d;
    }
    out[0] = (int)a;
}
