// A polynomial string hash modulo a prime, one thread per row of 4 characters
__global__ void hash_mod(const int* chars, int* h, int rows) {
    int i = threadIdx.x;
    if (i < rows) {
        int v = 0;
        for (int k = 0; k < 4; k++) v = (v * 31 + chars[4 * i + k]) % 10007;
        h[i] = v;
    }
}
