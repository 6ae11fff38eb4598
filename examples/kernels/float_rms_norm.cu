// RMS normalisation by a thread block: each thread sums the squares of a strided slice
// (an fma each), a shared-memory tree reduction adds the slices, r = sqrtf(mean square +
// 1e-6f), and every element is divided by r. It fits the large machine only with its
// float routines shared and what is live across their calls saved to memory around them
// (ten predicates otherwise: the fma routine alone uses seven).
__global__ void float_rms_norm(const float *x, float *y, int n) {
  __shared__ float s[32];
  int t = threadIdx.x;
  float acc = 0.0f;
  for (int i = t; i < n; i += blockDim.x) acc += x[i] * x[i];
  s[t] = acc;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  float r = sqrtf(s[0] / n + 1e-6f);
  for (int i = t; i < n; i += blockDim.x) y[i] = x[i] / r;
}
