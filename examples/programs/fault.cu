// A kernel that divides by zero: the machine stops the launch and reports it at this
// file's line, as for a single kernel; the program sees a launch failure from the
// next call that waits for the device, and every call after it fails the same way.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void divide(const int *num, const int *den, int *out) {
  int i = threadIdx.x;
  out[i] = num[i] / den[i];
}

int main() {
  int num[4] = {8, 9, 10, 11}, den[4] = {2, 3, 0, 1}, out[4] = {0, 0, 0, 0};
  int *d_num, *d_den, *d_out;
  cudaMalloc(&d_num, sizeof num);
  cudaMalloc(&d_den, sizeof den);
  cudaMalloc(&d_out, sizeof out);
  cudaMemcpy(d_num, num, sizeof num, cudaMemcpyHostToDevice);
  cudaMemcpy(d_den, den, sizeof den, cudaMemcpyHostToDevice);
  divide<<<1, 4>>>(d_num, d_den, d_out);
  cudaError_t err = cudaDeviceSynchronize();
  printf("synchronize: %s\n", cudaGetErrorString(err));
  err = cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost);
  printf("memcpy after it: %s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
