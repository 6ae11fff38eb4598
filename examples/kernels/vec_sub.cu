// Element-wise subtract with wrap-around; blockDim 6 is a partial second warp.
extern "C" __global__ void vec_sub(const int* a, const int* b, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        out[i] = (int)((unsigned)a[i] - (unsigned)b[i]);
    }
}
