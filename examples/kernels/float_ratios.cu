// Ratios whose divisions the lanes of one warp reach from different call sites: odd lanes
// divide a by b, even lanes b by a, the first three divide again, every lane twice more.
// Inlined, the five divisions need 195 blocks; the lowering calls one shared division, and
// each lane returns to its own site (by 0 gives infinity, 0 / 0 the canonical NaN).
__global__ void float_ratios(const float* a, const float* b, float* out) {
    int i = threadIdx.x;
    float x = a[i], y = b[i];
    float r;
    if (i & 1) r = x / y;
    else r = y / x;
    if (i < 3) r = r / (x + 1.0f);
    out[i] = r / y + x / 3.0f;
}
