// Error handling after a bad launch: a block of 2048 threads and an empty grid are
// beyond every device's limits. The launch does not run, cudaGetLastError says why,
// and the program goes on with a launch that fits the limits the device reports.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(int *out, int value) { out[threadIdx.x] = value + threadIdx.x; }

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  int *d_out;
  cudaMalloc(&d_out, 4 * sizeof(int));
  cudaMemset(d_out, 0, 4 * sizeof(int));

  fill<<<1, 2048>>>(d_out, 7);
  cudaError_t err = cudaGetLastError();
  printf("<<<1, 2048>>>: %s (%s)\n", cudaGetErrorName(err), cudaGetErrorString(err));
  printf("after reading it: %s\n", cudaGetErrorString(cudaGetLastError()));

  fill<<<0, 4>>>(d_out, 7);
  printf("<<<0, 4>>>: %s\n", cudaGetErrorString(cudaPeekAtLastError()));
  printf("peeked, still there: %s\n", cudaGetErrorString(cudaGetLastError()));

  int threads = prop.maxThreadsPerBlock < 4 ? prop.maxThreadsPerBlock : 4;
  fill<<<1, threads>>>(d_out, 40);
  err = cudaGetLastError();
  int out[4];
  cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost);
  printf("<<<1, %d>>>: %s, out = %d %d %d %d\n", threads, cudaGetErrorString(err), out[0], out[1], out[2],
         out[3]);
  cudaFree(d_out);
  return err == cudaSuccess ? 0 : 1;
}
