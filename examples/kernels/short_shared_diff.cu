// Signed shorts through __shared__ short: each thread stores its value, then writes the
// difference to its left neighbour (wrapping to short) and the unsigned short magnitude.
__global__ void short_shared_diff(const short* a, short* diff, unsigned short* mag) {
    __shared__ short s[8];
    int i = threadIdx.x;
    s[i] = a[i];
    __syncthreads();
    short left = i > 0 ? s[i - 1] : (short)0;
    diff[i] = (short)(s[i] - left);
    mag[i] = (unsigned short)(s[i] < 0 ? -s[i] : s[i]);
}
