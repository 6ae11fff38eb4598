// Modular exponentiation by squaring: out[i] = b[i]^e[i] mod m, with % by a register
__global__ void mod_pow(const int* b, const int* e, int* out, int m, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int result = 1 % m, base = b[i] % m, k = e[i];
        while (k > 0) {
            if (k & 1) result = result * base % m;
            base = base * base % m;
            k >>= 1;
        }
        out[i] = result;
    }
}
