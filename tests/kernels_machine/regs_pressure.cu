// Six loaded values stay live across their combination: most of a small register file.
__global__ void regs_pressure(const int* x, int* out) {
    int t = threadIdx.x;
    int v0 = x[t];
    int v1 = x[t + 4];
    int v2 = x[t + 8];
    int v3 = x[t + 12];
    int v4 = x[t + 16];
    int v5 = x[t + 20];
    int p = (v0 + v1) ^ (v2 - v3) ^ (v4 + v5);
    out[t] = v0 * p + v5;
    out[t + 4] = v1 * p + v4;
    out[t + 8] = v2 * p + v3;
    out[t + 12] = v3 * p + v2;
    out[t + 16] = v4 * p + v1;
    out[t + 20] = v5 * p + v0;
}
