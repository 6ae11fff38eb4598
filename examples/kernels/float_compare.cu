// Every ordered comparison of floats, and the unordered ones C writes as !(x < y) and
// y != y, on lanes where y is a NaN (6 and 7) and where x and y are the same value.
__global__ void float_compare(const float* a, const float* b, int* flags) {
    int i = threadIdx.x;
    float x = a[i], y = b[i];
    if (i >= 6) y = __int_as_float(0x7fc00000);
    flags[i] = (x < y) | (x <= y) << 1 | (x == y) << 2 | (x != y) << 3 | (x >= y) << 4 | (x > y) << 5
             | !(x < y) << 6 | (y != y) << 7;
}
