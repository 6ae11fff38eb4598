// Loop with continue (skip negatives) and break (stop at a zero sentinel).
__global__ void loop_break_continue(const int* data, int* sum, int* used, int m) {
    int t = threadIdx.x;
    int s = 0;
    int k;
    for (k = 0; k < m; k++) {
        int v = data[t * m + k];
        if (v == 0) break;
        if (v < 0) continue;
        s += v;
    }
    sum[t] = s;
    used[t] = k;
}
