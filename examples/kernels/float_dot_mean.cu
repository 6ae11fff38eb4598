// The mean of the elementwise products of two float arrays by a thread block: strided
// products summed by fma, a shared-memory tree reduction, the sum over n.
__global__ void float_dot_mean(const float *a, const float *b, float *out, int n) {
  __shared__ float s[32];
  int t = threadIdx.x;
  float acc = 0.0f;
  for (int i = t; i < n; i += blockDim.x) acc += a[i] * b[i];
  s[t] = acc;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  if (t == 0) out[0] = s[0] / n;
}
