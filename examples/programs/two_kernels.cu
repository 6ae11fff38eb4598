// Two kernels in sequence on the same device buffers: the second reads what the first
// wrote, with no copy in between (device memory persists from launch to launch).
#include <stdio.h>
#include <cuda_runtime.h>

__device__ int square(int x) { return x * x; }

__global__ void squareAll(int *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = square(data[i]);
}

__global__ void addNeighbour(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + (i + 1 < n ? in[i + 1] : 0);
}

int main(void) {
  const int n = 8;
  int host[n];
  for (int i = 0; i < n; i++) host[i] = i - 3;
  int *d_data, *d_out;
  cudaMalloc((void **)&d_data, n * sizeof(int));
  cudaMalloc((void **)&d_out, n * sizeof(int));
  cudaMemcpy(d_data, host, n * sizeof(int), cudaMemcpyHostToDevice);

  squareAll<<<2, 4>>>(d_data, n);
  addNeighbour<<<1, n>>>(d_data, d_out, n);

  int squares[n], sums[n];
  cudaMemcpy(squares, d_data, sizeof squares, cudaMemcpyDeviceToHost);
  cudaMemcpy(sums, d_out, sizeof sums, cudaMemcpyDeviceToHost);
  printf("squares:");
  for (int i = 0; i < n; i++) printf(" %d", squares[i]);
  printf("\nsums:");
  for (int i = 0; i < n; i++) printf(" %d", sums[i]);
  printf("\n");
  cudaFree(d_data);
  cudaFree(d_out);
  return 0;
}
