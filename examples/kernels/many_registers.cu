// Eight values per lane stay live across a reduction over all of them.
__global__ void many_registers(const int* x, int* out) {
    int t = threadIdx.x;
    int v0 = x[t];
    int v1 = x[t + 4];
    int v2 = x[t + 8];
    int v3 = x[t + 12];
    int v4 = x[t + 16];
    int v5 = x[t + 20];
    int v6 = x[t + 24];
    int v7 = x[t + 28];
    int p = (v0 + v1) ^ (v2 - v3) ^ (v4 + v5) ^ (v6 - v7);
    out[t] = v0 * p + v7;
    out[t + 4] = v1 * p + v6;
    out[t + 8] = v2 * p + v5;
    out[t + 12] = v3 * p + v4;
    out[t + 16] = v4 * p + v3;
    out[t + 20] = v5 * p + v2;
    out[t + 24] = v6 * p + v1;
    out[t + 28] = v7 * p + v0;
}
