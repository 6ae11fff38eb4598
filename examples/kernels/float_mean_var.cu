// The mean and sample variance of n floats by a thread block: each thread sums a strided
// slice, a shared-memory tree reduction adds the slices, the mean is that over n; then the
// squared deviations (an fma each) the same way, over n - 1. Its float routines (add,
// sub, fma, two divisions, two conversions) fit the large machine's 128 blocks only as
// one shared copy each, add and sub as calls of the fma routine, and only with what is
// live across a call (loop counters, the mean, the tree's flags) saved to a per-thread
// frame in memory around the call (host/float_spill.py).
__global__ void float_mean_var(const float *x, int n, float *mean, float *var) {
  __shared__ float s[32];
  __shared__ float q[32];
  int t = threadIdx.x;
  float acc = 0.0f;
  for (int i = t; i < n; i += blockDim.x) acc += x[i];
  s[t] = acc;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  float m = s[0] / n;
  float d = 0.0f;
  for (int i = t; i < n; i += blockDim.x) { float e = x[i] - m; d += e * e; }
  q[t] = d;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (t < o) q[t] += q[t + o];
    __syncthreads();
  }
  if (t == 0) { *mean = m; *var = q[0] / (n - 1); }
}
