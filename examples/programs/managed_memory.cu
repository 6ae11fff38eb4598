// Unified memory, as "An Even Easier Introduction to CUDA" writes it (in integers):
// cudaMallocManaged gives one pointer the host and the kernel both use, the kernel
// walks the array with a grid-stride loop, and the host checks the result in place
// after cudaDeviceSynchronize.
#include <iostream>
#include <cstdlib>

__global__ void add(int n, int *x, int *y) {
  int index = blockIdx.x * blockDim.x + threadIdx.x;
  int stride = blockDim.x * gridDim.x;
  for (int i = index; i < n; i += stride) y[i] = x[i] + y[i];
}

int main(void) {
  int N = 20;
  int *x, *y;
  cudaMallocManaged(&x, N * sizeof(int));
  cudaMallocManaged(&y, N * sizeof(int));
  for (int i = 0; i < N; i++) {
    x[i] = 1;
    y[i] = 2;
  }
  add<<<2, 4>>>(N, x, y);
  cudaDeviceSynchronize();
  int maxError = 0;
  for (int i = 0; i < N; i++) maxError = std::max(maxError, std::abs(y[i] - 3));
  std::cout << "Max error: " << maxError << std::endl;
  cudaFree(x);
  cudaFree(y);
  return 0;
}
