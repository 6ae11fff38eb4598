// A grid-stride loop over size_t indices, as CUDA's "write flexible kernels with
// grid-stride loops" tip writes it, and per-thread long long sums of squares whose
// total passes 2^32, printed with %zu, %lld and %llx from the host and from a kernel.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void saxpy_int(size_t n, int a, const int *x, int *y) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}

__global__ void sum_squares(size_t n, const int *x, long long *partial) {
  size_t t = blockIdx.x * blockDim.x + threadIdx.x;
  long long s = 0;
  for (size_t i = t; i < n; i += (size_t)blockDim.x * gridDim.x)
    s += (long long)x[i] * x[i];
  partial[t] = s;
}

__global__ void report(const long long *partial, size_t threads) {
  size_t t = threadIdx.x;
  if (t + 1 == threads) printf("thread %zu of %zu: partial sum %lld\n", t, threads, partial[t]);
}

int main() {
  const size_t n = 20, threads = 8;
  int x[n], y[n];
  for (size_t i = 0; i < n; i++) {
    x[i] = (int)(i * 9973 + 40000);
    y[i] = (int)i - 10;
  }
  int *d_x, *d_y;
  long long *d_partial;
  cudaMalloc(&d_x, n * sizeof(int));
  cudaMalloc(&d_y, n * sizeof(int));
  cudaMalloc(&d_partial, threads * sizeof(long long));
  cudaMemcpy(d_x, x, n * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemcpy(d_y, y, n * sizeof(int), cudaMemcpyHostToDevice);

  saxpy_int<<<2, 4>>>(n, 3, d_x, d_y);
  cudaMemcpy(y, d_y, n * sizeof(int), cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < n; i += 5) printf("y[%zu] = %d\n", i, y[i]);

  sum_squares<<<2, 4>>>(n, d_x, d_partial);
  report<<<1, threads>>>(d_partial, threads);
  long long partial[threads];
  cudaMemcpy(partial, d_partial, sizeof partial, cudaMemcpyDeviceToHost);
  long long total = 0;
  for (size_t t = 0; t < threads; t++) total += partial[t];
  printf("sum of squares of %zu values: %lld (0x%llx)\n", n, total, (unsigned long long)total);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_partial);
  return 0;
}
