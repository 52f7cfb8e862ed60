// Float depthwise convolutions, channel multiplier 1 (depthwise_conv_float.h).
#include "engine/kernels/depthwise_conv_float.h"

#include <algorithm>

#include "engine/kernels/float_vec.h"

namespace sluice {
namespace depthwise {
namespace {

using simd::Fma;
using simd::kLanes;
using simd::Vec;

inline Vec LoadN(const float* p, int64_t lanes) {
  return lanes == kLanes ? simd::Load(p) : simd::LoadPartial(p, lanes);
}
inline void StoreN(float* p, Vec v, int64_t lanes) {
  if (lanes == kLanes) {
    simd::Store(p, v);
  } else {
    simd::StorePartial(p, v, lanes);
  }
}

// a_j += p[j * step] * w for the four pixels j (four independent chains).
inline void Fma4(const float* p, int64_t step, Vec w, int64_t lanes, Vec& a0, Vec& a1, Vec& a2, Vec& a3) {
  a0 = Fma(LoadN(p, lanes), w, a0);
  a1 = Fma(LoadN(p + step, lanes), w, a1);
  a2 = Fma(LoadN(p + 2 * step, lanes), w, a2);
  a3 = Fma(LoadN(p + 3 * step, lanes), w, a3);
}

// Four pixels' vectors, `C` floats apart.
inline void Store4(float* p, int64_t C, Vec a0, Vec a1, Vec a2, Vec a3, int64_t lanes) {
  StoreN(p, a0, lanes);
  StoreN(p + C, a1, lanes);
  StoreN(p + 2 * C, a2, lanes);
  StoreN(p + 3 * C, a3, lanes);
}

// [*lo, *hi): the outputs o whose whole window (o * stride - pad + [0, k))
// lies inside the input.
// ceil(a / b) for a >= 0, b > 0, without a + b overflowing (any stride).
int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

void InteriorOutputs(const WindowDim& d, int64_t* lo, int64_t* hi) {
  *lo = std::min(d.out, CeilDiv(d.pad, d.stride));
  const int64_t last_start = d.in - d.k + d.pad;  // the largest o * stride
  *hi = last_start < 0 ? *lo : std::clamp(last_start / d.stride + 1, *lo, d.out);
}

// [*lo, *hi): the outputs o of window tap k that read an input inside
// [0, in): 0 <= o * stride - pad + k < in.
void OutputsOfTap(const WindowDim& d, int64_t k, int64_t* lo, int64_t* hi) {
  const int64_t first = d.pad - k;  // o * stride >= first
  *lo = first <= 0 ? 0 : std::min(d.out, CeilDiv(first, d.stride));
  const int64_t last = d.in - 1 + d.pad - k;  // o * stride <= last
  *hi = last < 0 ? *lo : std::clamp(last / d.stride + 1, *lo, d.out);
}

}  // namespace

void Forward(const ConvDims& g, const float* input, const float* filter, float* output, int64_t first, int64_t last) {
  const int64_t C = g.channels;
  const WindowDim &r = g.rows, &c = g.cols;
  int64_t lo, hi;
  InteriorOutputs(c, &lo, &hi);
  const int64_t step = c.out > 1 ? c.stride * C : 0;  // from one output pixel's input to the next's
  for (int64_t row = first; row < last; ++row) {
    const int64_t b = row / r.out, top = row % r.out * r.stride - r.pad;
    const int64_t ky_lo = std::max<int64_t>(0, -top), ky_hi = std::min(r.k, r.in - top);
    const float* image = input + b * r.in * c.in * C;
    float* out = output + row * c.out * C;
    for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, C - c0);
      auto pixel = [&](int64_t ox) {
        Vec acc = simd::Zero();
        for (int64_t ky = ky_lo; ky < ky_hi; ++ky) {
          const float* x = image + (top + ky) * c.in * C + c0;
          for (int64_t kx = 0; kx < c.k; ++kx) {
            const int64_t ix = ox * c.stride - c.pad + kx;
            if (ix < 0 || ix >= c.in) continue;
            acc = Fma(LoadN(x + ix * C, lanes), LoadN(filter + (ky * c.k + kx) * C + c0, lanes), acc);
          }
        }
        StoreN(out + ox * C + c0, acc, lanes);
      };
      int64_t ox = 0;
      for (; ox < lo; ++ox) pixel(ox);
      for (; ox + 4 <= hi; ox += 4) {
        Vec a0 = simd::Zero(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t ky = ky_lo; ky < ky_hi; ++ky) {
          const float* x = image + (top + ky) * c.in * C + (ox * c.stride - c.pad) * C + c0;
          for (int64_t kx = 0; kx < c.k; ++kx) {
            Fma4(x + kx * C, step, LoadN(filter + (ky * c.k + kx) * C + c0, lanes), lanes, a0, a1, a2, a3);
          }
        }
        Store4(out + ox * C + c0, C, a0, a1, a2, a3, lanes);
      }
      for (; ox < c.out; ++ox) pixel(ox);
    }
  }
}

void BackpropInput(const ConvDims& g, const float* out_backprop, const float* filter, float* input_backprop,
                   int64_t first, int64_t last) {
  const int64_t C = g.channels;
  const WindowDim &r = g.rows, &c = g.cols;
  // With column stride 1, input column ix takes output columns ix + pad - kx
  // for every kx: all of them exist for ix in [lo, hi).
  int64_t lo = c.out, hi = c.out;
  if (c.stride == 1) {
    lo = std::clamp<int64_t>(c.k - 1 - c.pad, 0, c.in);
    hi = std::clamp<int64_t>(c.out - c.pad, lo, c.in);
  }
  for (int64_t row = first; row < last; ++row) {
    const int64_t b = row / r.in, iy = row % r.in;
    float* dx = input_backprop + row * c.in * C;
    const float* dy_image = out_backprop + b * r.out * c.out * C;
    for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, C - c0);
      auto pixel = [&](int64_t ix) {
        Vec acc = simd::Zero();
        for (int64_t ky = 0; ky < r.k; ++ky) {
          const int64_t ty = iy + r.pad - ky;
          if (ty < 0 || ty % r.stride != 0 || ty / r.stride >= r.out) continue;
          const float* dy = dy_image + ty / r.stride * c.out * C + c0;
          for (int64_t kx = 0; kx < c.k; ++kx) {
            const int64_t tx = ix + c.pad - kx;
            if (tx < 0 || tx % c.stride != 0 || tx / c.stride >= c.out) continue;
            acc = Fma(LoadN(dy + tx / c.stride * C, lanes), LoadN(filter + (ky * c.k + kx) * C + c0, lanes), acc);
          }
        }
        StoreN(dx + ix * C + c0, acc, lanes);
      };
      int64_t ix = 0;
      for (; ix < lo; ++ix) pixel(ix);
      for (; ix + 4 <= hi; ix += 4) {  // column stride 1, every kx in range
        Vec a0 = simd::Zero(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t ky = 0; ky < r.k; ++ky) {
          const int64_t ty = iy + r.pad - ky;
          if (ty < 0 || ty % r.stride != 0 || ty / r.stride >= r.out) continue;
          const float* dy = dy_image + (ty / r.stride * c.out + ix + c.pad) * C + c0;
          for (int64_t kx = 0; kx < c.k; ++kx) {
            Fma4(dy - kx * C, C, LoadN(filter + (ky * c.k + kx) * C + c0, lanes), lanes, a0, a1, a2, a3);
          }
        }
        Store4(dx + ix * C + c0, C, a0, a1, a2, a3, lanes);
      }
      for (; ix < c.in; ++ix) pixel(ix);
    }
  }
}

void BackpropFilter(const ConvDims& g, const float* input, const float* out_backprop, float* partial, int64_t first,
                    int64_t last) {
  const int64_t C = g.channels;
  const WindowDim &r = g.rows, &c = g.cols;
  const int64_t step = c.out > 1 ? c.stride * C : 0;
  for (int64_t ky = 0; ky < r.k; ++ky) {
    for (int64_t kx = 0; kx < c.k; ++kx) {
      int64_t ox_lo, ox_hi;
      OutputsOfTap(c, kx, &ox_lo, &ox_hi);
      for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
        const int64_t lanes = std::min<int64_t>(kLanes, C - c0);
        // Four chains over the columns (ox mod 4), added at the end.
        Vec a0 = simd::Zero(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t row = first; row < last; ++row) {
          const int64_t b = row / r.out, iy = row % r.out * r.stride - r.pad + ky;
          if (iy < 0 || iy >= r.in) continue;
          const float* x = input + ((b * r.in + iy) * c.in + ox_lo * c.stride - c.pad + kx) * C + c0;
          const float* dy = out_backprop + (row * c.out + ox_lo) * C + c0;
          int64_t n = ox_hi - ox_lo;
          for (; n >= 4; n -= 4, x += 4 * step, dy += 4 * C) {
            a0 = Fma(LoadN(x, lanes), LoadN(dy, lanes), a0);
            a1 = Fma(LoadN(x + step, lanes), LoadN(dy + C, lanes), a1);
            a2 = Fma(LoadN(x + 2 * step, lanes), LoadN(dy + 2 * C, lanes), a2);
            a3 = Fma(LoadN(x + 3 * step, lanes), LoadN(dy + 3 * C, lanes), a3);
          }
          for (; n > 0; --n, x += step, dy += C) a0 = Fma(LoadN(x, lanes), LoadN(dy, lanes), a0);
        }
        StoreN(partial + (ky * c.k + kx) * C + c0, (a0 + a1) + (a2 + a3), lanes);
      }
    }
  }
}

}  // namespace depthwise
}  // namespace sluice
