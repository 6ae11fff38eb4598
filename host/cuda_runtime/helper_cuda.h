/* The CUDA samples' helper_cuda.h, as far as their programs use it: checkCudaErrors,
 * getLastCudaError and findCudaDevice, with the samples' own messages. */
#ifndef QWENGPU_HELPER_CUDA_H
#define QWENGPU_HELPER_CUDA_H

#include <stdio.h>
#include <stdlib.h>
#include "cuda_runtime.h"

static inline const char *_cudaGetErrorEnum(cudaError_t error) { return cudaGetErrorName(error); }

template <typename T>
void check(T result, char const *const func, const char *const file, int const line) {
  if (result) {
    fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\" \n", file, line, static_cast<unsigned int>(result),
            _cudaGetErrorEnum(result), func);
    exit(EXIT_FAILURE);
  }
}
#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)

#define getLastCudaError(msg) __getLastCudaError(msg, __FILE__, __LINE__)
static inline void __getLastCudaError(const char *errorMessage, const char *file, const int line) {
  cudaError_t err = cudaGetLastError();
  if (cudaSuccess != err) {
    fprintf(stderr, "%s(%i) : getLastCudaError() CUDA error : %s : (%d) %s.\n", file, line, errorMessage,
            static_cast<int>(err), cudaGetErrorString(err));
    exit(EXIT_FAILURE);
  }
}

static inline int findCudaDevice(int argc, const char **argv) {
  (void)argc, (void)argv;
  cudaDeviceProp prop;
  checkCudaErrors(cudaGetDeviceProperties(&prop, 0));
  printf("GPU Device %d: \"%s\" with compute capability %d.%d\n\n", 0, prop.name, prop.major, prop.minor);
  return 0;
}

#endif
