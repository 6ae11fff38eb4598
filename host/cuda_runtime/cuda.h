#ifndef QWENGPU_CUDA_H
#define QWENGPU_CUDA_H
#include "cuda_runtime.h"
#endif
