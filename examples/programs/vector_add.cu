// Vector addition, the first program of every CUDA tutorial: copy two vectors to the
// device, add them there, copy the sum back. Every runtime call goes through CHECK.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t err = (call);                                                    \
    if (err != cudaSuccess) {                                                    \
      fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,           \
              cudaGetErrorString(err));                                          \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

__global__ void vectorAdd(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  const int n = 10;
  const size_t bytes = n * sizeof(int);
  int h_a[n], h_b[n], h_c[n];
  for (int i = 0; i < n; i++) {
    h_a[i] = i;
    h_b[i] = 100 - 3 * i;
  }
  int *d_a, *d_b, *d_c;
  CHECK(cudaMalloc(&d_a, bytes));
  CHECK(cudaMalloc(&d_b, bytes));
  CHECK(cudaMalloc(&d_c, bytes));
  CHECK(cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice));

  int threads = 4;
  int blocks = (n + threads - 1) / threads;
  vectorAdd<<<blocks, threads>>>(d_a, d_b, d_c, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h_c, d_c, bytes, cudaMemcpyDeviceToHost));

  for (int i = 0; i < n; i++) printf("%d + %d = %d\n", h_a[i], h_b[i], h_c[i]);
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_c));
  return 0;
}
