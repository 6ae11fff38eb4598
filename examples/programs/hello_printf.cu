// printf in a kernel, the first program of many tutorials: every thread greets, and
// the output appears at the next synchronization, after what the host printed first.
#include <cstdio>

__global__ void hello(int base) {
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  printf("Hello from block %d, thread %d: id %d, value %d\n", blockIdx.x, threadIdx.x, id, base + id * id);
}

int main() {
  hello<<<2, 3>>>(100);
  printf("launched\n");
  cudaDeviceSynchronize();
  printf("synchronized\n");
  return 0;
}
