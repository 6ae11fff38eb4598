// Four conditions computed first, all live until the end: four predicate registers.
__global__ void preds_live(const int* x, int* out) {
    int t = threadIdx.x;
    int v = x[t];
    bool a = v > 0;
    bool b = (v & 1) != 0;
    bool c = v < 100;
    bool d = v != 7;
    int r = x[t + 4];
    if (a) r += 1;
    if (b) r ^= 2;
    if (c) r -= 4;
    if (d) r |= 8;
    out[t] = r;
}
