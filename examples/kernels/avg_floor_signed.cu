// Signed halving: x / 2 truncates toward zero, x >> 1 rounds toward minus infinity.
__global__ void avg_floor_signed(const int* a, const int* b, int* trunc, int* floor_) {
    int i = threadIdx.x;
    int s = (int)((unsigned)a[i] + (unsigned)b[i]);
    trunc[i] = s / 2;
    floor_[i] = s >> 1;
}
