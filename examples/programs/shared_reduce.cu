// A sum in two launches: each block reduces its slice in dynamic shared memory
// (extern __shared__, sized by the launch's third argument) to one partial sum,
// then a second launch of one block adds the partial sums.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void blockSum(const int *in, int *partial, int n) {
  extern __shared__ int cache[];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  cache[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) cache[t] += cache[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = cache[0];
}

int main() {
  const int n = 14, threads = 4, blocks = (n + threads - 1) / threads;
  int h[n];
  for (int i = 0; i < n; i++) h[i] = (i * 7) % 5 - 1;
  int *d_in, *d_partial, *d_total;
  cudaMalloc(&d_in, sizeof h);
  cudaMalloc(&d_partial, blocks * sizeof(int));
  cudaMalloc(&d_total, sizeof(int));
  cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice);
  blockSum<<<blocks, threads, threads * sizeof(int)>>>(d_in, d_partial, n);
  blockSum<<<1, blocks, blocks * sizeof(int)>>>(d_partial, d_total, blocks);
  int partial[blocks], total;
  cudaMemcpy(partial, d_partial, sizeof partial, cudaMemcpyDeviceToHost);
  cudaMemcpy(&total, d_total, sizeof total, cudaMemcpyDeviceToHost);
  printf("partial sums:");
  for (int b = 0; b < blocks; b++) printf(" %d", partial[b]);
  printf("\ntotal: %d\n", total);
  cudaFree(d_in);
  cudaFree(d_partial);
  cudaFree(d_total);
  return 0;
}
