// Each thread's running mean and sample variance of a strided slice, one element at a
// time (Welford's update: the mean moves by d / count, m2 by d * (x - new mean), an fma):
// a division, a conversion and three fma-routine calls per element in a loop, with the
// counter, the bound, the count, the mean and m2 live across every call. It fits the
// large machine only with what is live across a call saved to memory around it.
__global__ void float_running_stats(const float *x, float *out, int n) {
  int t = threadIdx.x;
  float mean = 0.0f, m2 = 0.0f;
  int count = 0;
  for (int i = t; i < n; i += blockDim.x) {
    count++;
    float d = x[i] - mean;
    mean += d / count;
    m2 += d * (x[i] - mean);
  }
  out[2 * t] = mean;
  out[2 * t + 1] = count > 1 ? m2 / (count - 1) : 0.0f;
}
