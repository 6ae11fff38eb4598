#ifndef QWENGPU_CUDA_RUNTIME_API_H
#define QWENGPU_CUDA_RUNTIME_API_H
#include "cuda_runtime.h"
#endif
