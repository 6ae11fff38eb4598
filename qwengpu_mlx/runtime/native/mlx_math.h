// MLX's CPU exp and sigmoid (mlx/backend/cpu/simd/math.h, unary_ops.h), lane by lane.
//
// The same float operations in the same order as MLX's Simd<float, 1> code, written as
// plain functions so that loops over them vectorize; checked bit for bit against
// mx::detail::Exp and mx::detail::Sigmoid (tests/test_native_step.py runs that check).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
// MLX's CPU exp (mlx/backend/cpu/simd/math.h), written lane by lane so loops vectorize.
inline float exp_lane(float x_init) {
  float x = x_init * 1.442695f;
  float ipart = std::floor(x + 0.5f);  // MLX adds 0.5 in double: the same wherever the result is not masked below
  float fpart = x - ipart;
  x = 1.535336188319500e-4f;
  x = std::fma(x, fpart, 1.339887440266574e-3f);
  x = std::fma(x, fpart, 9.618437357674640e-3f);
  x = std::fma(x, fpart, 5.550332471162809e-2f);
  x = std::fma(x, fpart, 2.402264791363012e-1f);
  x = std::fma(x, fpart, 6.931472028550421e-1f);
  x = std::fma(x, fpart, 1.000000000000000f);
  int32_t epart = (static_cast<int32_t>(ipart) + 127) << 23;
  float scale;
  std::memcpy(&scale, &epart, sizeof scale);
  float r = std::isnan(x_init) ? x_init : scale * x;
  r = x_init > 88.0f ? std::numeric_limits<float>::infinity() : r;
  return x_init < -88.0f ? 0.0f : r;
}
inline float sigmoid_lane(float v) {
  float y = 1.0f / (1.0f + exp_lane(std::fabs(v)));
  return v < 0.0f ? y : 1.0f - y;
}
