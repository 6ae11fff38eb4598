// __constant__ and __device__ variables: polynomial coefficients copied in with
// cudaMemcpyToSymbol, a launch counter with an initializer that every launch bumps,
// read back with cudaMemcpyFromSymbol.
#include <cstdio>
#include <cuda_runtime.h>

__constant__ int coeff[3];
__device__ int launches = 100;

__global__ void poly(const int *x, int *y, int n) {
  int i = threadIdx.x;
  if (i < n) y[i] = coeff[0] + x[i] * (coeff[1] + x[i] * coeff[2]);
  if (i == 0) launches += 1;
}

int main() {
  const int n = 6;
  int x[n] = {-2, -1, 0, 1, 2, 3}, y[n];
  int c[3] = {1, -2, 3};
  cudaMemcpyToSymbol(coeff, c, sizeof c);
  int *d_x, *d_y;
  cudaMalloc(&d_x, sizeof x);
  cudaMalloc(&d_y, sizeof y);
  cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice);
  poly<<<1, n>>>(d_x, d_y, n);
  cudaMemcpy(y, d_y, sizeof y, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; i++) printf("p(%d) = %d\n", x[i], y[i]);
  c[2] = 0;
  cudaMemcpyToSymbol(coeff, &c[2], sizeof(int), 2 * sizeof(int));
  poly<<<1, n>>>(d_x, d_y, n);
  cudaMemcpy(y, d_y, sizeof y, cudaMemcpyDeviceToHost);
  printf("linear: %d %d\n", y[0], y[n - 1]);
  int count = 0;
  cudaMemcpyFromSymbol(&count, launches, sizeof count);
  printf("launch counter: %d\n", count);
  cudaFree(d_x);
  cudaFree(d_y);
  return 0;
}
