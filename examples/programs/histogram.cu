// A histogram: the bins are cleared with cudaMemset, then every thread adds its
// values' counts with atomicAdd (several threads hit the same bin).
#include <cstdio>
#include <cuda_runtime.h>

#define BINS 4

__global__ void histogram(const int *values, int n, int *bins) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[values[i] % BINS], 1);
}

int main() {
  const int n = 12;
  int values[n] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
  int *d_values, *d_bins;
  cudaMalloc(&d_values, sizeof values);
  cudaMalloc(&d_bins, BINS * sizeof(int));
  cudaMemcpy(d_values, values, sizeof values, cudaMemcpyHostToDevice);
  cudaMemset(d_bins, 0, BINS * sizeof(int));
  histogram<<<3, 4>>>(d_values, n, d_bins);
  int bins[BINS];
  cudaMemcpy(bins, d_bins, sizeof bins, cudaMemcpyDeviceToHost);
  for (int b = 0; b < BINS; b++) printf("bin %d: %d\n", b, bins[b]);
  cudaFree(d_values);
  cudaFree(d_bins);
  return 0;
}
