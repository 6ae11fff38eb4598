// A softmax's shape without its exponential (expf comes from libdevice, which the machine
// does not have): a block's maximum by a shared-memory tree of fmaxf, then the sum of
// (x - max)^2 + 1 by a second tree, each element's term over that sum. Its float routines
// fit the large machine's 128 blocks only at the compact sharing level: one fma routine
// computes the adds, subtracts and fmas, and the division is a second entry of it, whose
// quotient ends in the fma's tail (host/float_unit.py).
__global__ void float_max_sum_norm(const float *x, float *y, int n) {
  __shared__ float s[32];
  int t = threadIdx.x;
  float m = -1e30f;
  for (int i = t; i < n; i += blockDim.x) m = fmaxf(m, x[i]);
  s[t] = m;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (t < o) s[t] = fmaxf(s[t], s[t + o]);
    __syncthreads();
  }
  float mx = s[0];
  __syncthreads();
  float sum = 0.0f;
  for (int i = t; i < n; i += blockDim.x) { float e = x[i] - mx; sum += e * e + 1.0f; }
  s[t] = sum;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  float total = s[0];
  for (int i = t; i < n; i += blockDim.x) { float e = x[i] - mx; y[i] = (e * e + 1.0f) / total; }
}
