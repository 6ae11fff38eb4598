// A 2-D launch: a dim3 grid of dim3 blocks, one thread per element of a 6 x 4 matrix,
// writes its transpose (threads outside the matrix do nothing).
#include <cstdio>
#include <cuda_runtime.h>

#define ROWS 6
#define COLS 4

__global__ void transpose(const int *in, int *out, int rows, int cols) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < rows && col < cols) out[col * rows + row] = in[row * cols + col];
}

int main() {
  int h_in[ROWS * COLS], h_out[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; i++) h_in[i] = i * i - 10 * i;
  int *d_in, *d_out;
  cudaMalloc(&d_in, sizeof h_in);
  cudaMalloc(&d_out, sizeof h_out);
  cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
  dim3 block(4, 2);
  dim3 grid((COLS + block.x - 1) / block.x, (ROWS + block.y - 1) / block.y);
  transpose<<<grid, block>>>(d_in, d_out, ROWS, COLS);
  cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost);
  for (int r = 0; r < COLS; r++) {
    for (int c = 0; c < ROWS; c++) printf("%5d", h_out[r * ROWS + c]);
    printf("\n");
  }
  cudaFree(d_in);
  cudaFree(d_out);
  return 0;
}
