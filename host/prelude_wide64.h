/* qwengpu prelude, 64-bit integer part (included by prelude.h for clang only): the type
 * names CUDA code uses for 64-bit values, as <cstddef>/<cstdint> declare them on an LP64
 * host (the same types, so a program that includes those headers too still compiles).
 * The machine is 32-bit; host/wide64.py lowers these values to pairs of words. */
#ifndef QWENGPU_PRELUDE_WIDE64_H
#define QWENGPU_PRELUDE_WIDE64_H
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT32_TYPE__ uint32_t;
#endif
