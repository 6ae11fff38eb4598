// A self-checking program in the style of CUDA's samples: the device computes
// y = a*x + y (integer SAXPY), the host computes the same, and the program prints
// PASSED or FAILED and exits with 0 or 1.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void saxpy(int n, int a, const int *x, int *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 12, a = -3;
  int x[n], y[n], expected[n];
  for (int i = 0; i < n; i++) {
    x[i] = i * i - 20;
    y[i] = 5 * i + 1;
    expected[i] = a * x[i] + y[i];
  }
  int *d_x, *d_y;
  cudaMalloc(&d_x, sizeof x);
  cudaMalloc(&d_y, sizeof y);
  cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice);
  cudaMemcpy(d_y, y, sizeof y, cudaMemcpyHostToDevice);
  saxpy<<<3, 4>>>(n, a, d_x, d_y);
  cudaMemcpy(y, d_y, sizeof y, cudaMemcpyDeviceToHost);
  int errors = 0;
  for (int i = 0; i < n; i++) {
    if (y[i] != expected[i]) {
      printf("mismatch at %d: %d != %d\n", i, y[i], expected[i]);
      errors++;
    }
  }
  printf("%s\n", errors == 0 ? "PASSED" : "FAILED");
  cudaFree(d_x);
  cudaFree(d_y);
  return errors == 0 ? 0 : 1;
}
