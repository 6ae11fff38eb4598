// Device query, as CUDA's deviceQuery sample prints it (a few of its lines), then an
// allocation larger than the device's memory, which fails with cudaErrorMemoryAllocation.
#include <cstdio>
#include <cuda_runtime.h>

int main() {
  int count = 0;
  cudaGetDeviceCount(&count);
  printf("devices: %d\n", count);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("name: %s\n", prop.name);
  printf("compute capability: %d.%d\n", prop.major, prop.minor);
  printf("total global memory: %zu bytes\n", prop.totalGlobalMem);
  printf("shared memory per block: %zu bytes\n", prop.sharedMemPerBlock);
  printf("warp size: %d\n", prop.warpSize);
  printf("max threads per block: %d\n", prop.maxThreadsPerBlock);
  int *d = nullptr;
  cudaError_t err = cudaMalloc(&d, prop.totalGlobalMem + 4);
  printf("cudaMalloc(%zu): %s\n", prop.totalGlobalMem + 4, cudaGetErrorString(err));
  printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));
  return 0;
}
