// SAXPY in float, as the CUDA blog's first example writes it: y = a*x + y on the
// device, then the host prints a few results and the largest difference from what
// it expects (2.25 * i: every value here is exact in float).
#include <cstdio>
#include <cmath>

__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main(void) {
  const int N = 20;
  float x[N], y[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 0.25f * i;
  }
  float *d_x, *d_y;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMemcpy(d_x, x, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_y, y, N * sizeof(float), cudaMemcpyHostToDevice);
  saxpy<<<(N + 31) / 32, 32>>>(N, 2.0f, d_x, d_y);
  cudaMemcpy(y, d_y, N * sizeof(float), cudaMemcpyDeviceToHost);
  float maxError = 0.0f;
  for (int i = 0; i < N; i++) maxError = fmaxf(maxError, fabsf(y[i] - 2.25f * i));
  printf("y[0] = %f, y[%d] = %f\n", y[0], N - 1, y[N - 1]);
  printf("Max error: %f\n", maxError);
  cudaFree(d_x);
  cudaFree(d_y);
  return 0;
}
