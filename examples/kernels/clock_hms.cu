// Hours, minutes and seconds of a count of seconds, with / and % as anyone writes them.
// clang computes `s % 3600 / 60` in 16 bits (mul.hi.s16): it needs the narrow lowering.
__global__ void clock_hms(const int* secs, int* h, int* m, int* s, int n) {
    int i = threadIdx.x;
    if (i < n) {
        int t = secs[i];
        h[i] = t / 3600;
        m[i] = t % 3600 / 60;
        s[i] = t % 60;
    }
}
