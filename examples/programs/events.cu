// Timing a kernel with events, as the CUDA programming guide does: record an event
// before and after the launch, wait for the second, read the time between them.
// (The time varies from run to run; the program prints only whether it was measured.)
#include <cstdio>
#include <cuda_runtime.h>

__global__ void increment(int *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}

int main() {
  const int n = 8;
  int h[n] = {0, 1, 2, 3, 4, 5, 6, 7};
  int *d;
  cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  increment<<<2, 4>>>(d, n);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = -1.0f;
  cudaError_t err = cudaEventElapsedTime(&ms, start, stop);
  printf("elapsed time: %s\n", err == cudaSuccess && ms >= 0.0f ? "measured" : "missing");
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; i++) printf("%d ", h[i]);
  printf("\n");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(d);
  return 0;
}
