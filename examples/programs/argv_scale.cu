// Arguments from the command line: qwengpu-mlx run argv_scale.cu -- N FACTOR
// (N elements 0..N-1, each multiplied by FACTOR on the device); usage on stderr and
// exit status 2 when they are missing or out of range.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void scale(int *x, int factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s N FACTOR\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[1]), factor = atoi(argv[2]);
  if (n < 1 || n > 16) {
    fprintf(stderr, "N must be 1..16\n");
    return 2;
  }
  int *h = (int *)malloc(n * sizeof(int));
  for (int i = 0; i < n; i++) h[i] = i;
  int *d;
  cudaMalloc(&d, n * sizeof(int));
  cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
  scale<<<(n + 3) / 4, 4>>>(d, factor, n);
  cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; i++) printf("%d%c", h[i], i == n - 1 ? '\n' : ' ');
  cudaFree(d);
  free(h);
  return 0;
}
