/* qwengpu-mlx's cuda_runtime.h: the CUDA runtime API a program's host code calls.
 *
 * A program compiled by `qwengpu-mlx run prog.cu` gets this header in place of
 * NVIDIA's (there is no CUDA SDK here). Its functions are defined in
 * qwengpu_cuda_runtime.cpp, linked into the program: each one that touches the
 * device asks the qwengpu-mlx process over a pipe, which holds the machine's memory
 * and runs every launch on the model. A device pointer is 0x200000000 + the machine's
 * byte address (NULL stays 0; host/program_protocol.py, DEVICE_BASE). clang lowers `kernel<<<grid, block, shared>>>(...)` to
 * __cudaPushCallConfiguration and a stub calling cudaLaunchKernel, as for nvcc.
 *
 * What a GPU program can do that this machine cannot is declared `unavailable`, so
 * clang refuses it at the user's own line with the way around.
 */
#ifndef QWENGPU_CUDA_RUNTIME_H
#define QWENGPU_CUDA_RUNTIME_H

#include <stddef.h>

#ifndef __CUDA__ /* the runtime's own source, compiled as plain C++ */
#define __host__
#define __device__
#endif

#define QWENGPU_UNAVAILABLE(why) __attribute__((unavailable(why)))

struct uint3 { unsigned int x, y, z; };
struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ constexpr operator uint3(void) const { return uint3{x, y, z}; }
};

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorMisalignedAddress = 716,
  cudaErrorInvalidPc = 718,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;

#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaCpuDeviceId (-1)

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

struct cudaDeviceProp {
  char name[256];
  char uuid[16];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int deviceOverlap;
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;
  int integrated;
  int canMapHostMemory;
  int computeMode;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int singleToDoublePrecisionPerfRatio;
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrTotalConstantMemory = 9,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrManagedMemory = 83,
};

#ifdef __cplusplus
extern "C" {
#endif

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaMallocHost(void **ptr, size_t size);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemset(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaMemcpyToSymbol__qwengpu(const void *symbol, const void *src, size_t count, size_t offset,
                                        enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyFromSymbol__qwengpu(void *dst, const void *symbol, size_t count, size_t offset,
                                          enum cudaMemcpyKind kind);
cudaError_t cudaGetSymbolAddress__qwengpu(void **devPtr, const void *symbol);
cudaError_t cudaGetSymbolSize__qwengpu(size_t *size, const void *symbol);

cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaThreadSynchronize(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDriverGetVersion(int *version);
cudaError_t cudaRuntimeGetVersion(int *version);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream __attribute__((unused)) = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);

/* clang's launch lowering (CUDA >= 9.2) and kernel registration */
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem = 0, cudaStream_t stream = 0);
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                             cudaStream_t stream);

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags = 1);
cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, int dstDevice, cudaStream_t stream = 0);
cudaError_t cudaMemAdvise(const void *devPtr, size_t count, int advice, int device);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind) QWENGPU_UNAVAILABLE(
    "cudaMemcpy2D is not supported by qwengpu-mlx: copy row by row with cudaMemcpy");

#ifdef __cplusplus
}
#endif

#if defined(__CUDA__) && defined(__cplusplus)
/* The device malloc/free clang's <new> wrapper calls (its operator new for device code),
   declared as NVIDIA's headers declare them; a kernel that calls them is refused when
   its PTX is translated (the machine has no heap). */
#include <stdlib.h>
extern "C" __device__ void *malloc(size_t size);
extern "C" __device__ void free(void *ptr);

/* printf in a kernel: clang lowers it to vprintf, which host/program_printf.py turns into
   records in device memory; the runtime prints them at the next synchronizing call. */
extern "C" __device__ int printf(const char *format, ...);
#endif

#ifdef __cplusplus
/* CUDA's C++ forms: a symbol is the __device__/__constant__ variable itself */
template <class T>
static inline cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t count, size_t offset = 0,
                                             enum cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  return cudaMemcpyToSymbol__qwengpu((const void *)&symbol, src, count, offset, kind);
}
template <class T>
static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t count, size_t offset = 0,
                                               enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  return cudaMemcpyFromSymbol__qwengpu(dst, (const void *)&symbol, count, offset, kind);
}
template <class T>
static inline cudaError_t cudaGetSymbolAddress(void **devPtr, const T &symbol) {
  return cudaGetSymbolAddress__qwengpu(devPtr, (const void *)&symbol);
}
template <class T>
static inline cudaError_t cudaGetSymbolSize(size_t *size, const T &symbol) {
  return cudaGetSymbolSize__qwengpu(size, (const void *)&symbol);
}
template <class T>
static inline cudaError_t cudaMalloc(T **devPtr, size_t size) {
  return cudaMalloc((void **)devPtr, size);
}
template <class T>
static inline cudaError_t cudaMallocManaged(T **devPtr, size_t size, unsigned int flags = 1) {
  return cudaMallocManaged((void **)devPtr, size, flags);
}
template <class T>
static inline cudaError_t cudaMallocHost(T **ptr, size_t size) {
  return cudaMallocHost((void **)ptr, size);
}
#endif

#endif /* QWENGPU_CUDA_RUNTIME_H */
