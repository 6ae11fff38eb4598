// An iterative 1-D stencil: each step averages every cell with its two neighbours
// (integer sum of three, the ends held at 0) into a second buffer, then the two
// device buffers swap roles: no copy between steps, one launch per step.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void blur(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int left = i > 0 ? in[i - 1] : 0;
  int right = i < n - 1 ? in[i + 1] : 0;
  out[i] = left + in[i] + right;
}

int main() {
  const int n = 8, steps = 3;
  int h[n] = {0, 0, 0, 1, 0, 0, 0, 0};
  int *d_cur, *d_next;
  cudaMalloc(&d_cur, n * sizeof(int));
  cudaMalloc(&d_next, n * sizeof(int));
  cudaMemcpy(d_cur, h, sizeof h, cudaMemcpyHostToDevice);
  for (int s = 0; s < steps; s++) {
    blur<<<2, 4>>>(d_cur, d_next, n);
    int *t = d_cur;
    d_cur = d_next;
    d_next = t;
  }
  cudaMemcpy(h, d_cur, sizeof h, cudaMemcpyDeviceToHost);
  printf("after %d steps:", steps);
  for (int i = 0; i < n; i++) printf(" %d", h[i]);
  printf("\n");
  cudaFree(d_cur);
  cudaFree(d_next);
  return 0;
}
