// A while loop whose trip count is the lane's thread index plus one.
__global__ void lane_while(const int* x, int* out) {
    int t = threadIdx.x;
    int k = t;
    int s = 0;
    #pragma unroll 1
    while (k >= 0) {
        s += x[k];
        k--;
    }
    out[t] = s;
}
