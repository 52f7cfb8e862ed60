// The convolution as the cuDNN kernels (conv_ops_gpu.cc) hand it to cuDNN,
// and Conv2DBackpropInput rewritten as a forward convolution (its filter:
// conv_filter_flip.h). Host code, no cuDNN calls: tested without a GPU
// (conv_cudnn_shape_test.cc).
//
// Input gradient as a forward convolution. With stride 1 and symmetric
// padding p (per dimension), the input gradient of a correlation is itself a
// correlation: of dy with the filter turned by 180 degrees and its input and
// output channels swapped, padded by k - 1 - p:
//   dx[n, u, v, c] = sum_{i, j, o} dy[n, u + i - (kh-1-ph), v + j - (kw-1-pw), o]
//                                   * w[kh-1-i, kw-1-j, c, o]
// (dy zero outside its rows and columns). It is the same sum of the same
// products as the backward-data algorithms', in another order: no transform.
// On an H200, cuDNN's fp32 forward kernels ran fashion_cnn's conv2 at about
// 1.8 times the FLOP rate of its backward-data ones (session 41's search
// times at batch 1024, NCHW, less the transposes' estimate: forward 0.47 ms,
// backward data 0.86 ms), so the input gradient's plan times both and keeps
// the faster.
// Thread safety: functions of their arguments.
#ifndef SLUICE_ENGINE_KERNELS_GPU_CONV_CUDNN_SHAPE_H_
#define SLUICE_ENGINE_KERNELS_GPU_CONV_CUDNN_SHAPE_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <tuple>

#include "engine/kernels/conv_shape.h"

namespace sluice {
namespace gpu {

// The convolution as cuDNN sees it: the NHWC input [n, h, w, c] with `eh`
// zero rows and `ew` zero columns appended (TensorFlow's SAME puts the odd
// row/column of padding at the bottom/right; cuDNN pads both sides alike),
// then symmetric padding ph/pw; HWIO filter [kh, kw, c, o]; output
// [n, oh, ow, o].
struct ConvShape {
  int64_t n, h, w, c, kh, kw, o, oh, ow, sh, sw, ph, pw, eh, ew;
  auto Tie() const { return std::tie(n, h, w, c, kh, kw, o, oh, ow, sh, sw, ph, pw, eh, ew); }
  bool operator<(const ConvShape& other) const { return Tie() < other.Tie(); }
  int64_t padded_h() const { return h + eh; }
  int64_t padded_w() const { return w + ew; }
  bool asymmetric() const { return eh != 0 || ew != 0; }
};

inline ConvShape ShapeOf(const ConvGeometry& g) {
  ConvShape s;
  s.n = g.batch;
  s.h = g.in_rows;
  s.w = g.in_cols;
  s.c = g.in_depth;
  s.kh = g.filter_rows;
  s.kw = g.filter_cols;
  s.o = g.out_depth;
  s.oh = g.rows.out;
  s.ow = g.cols.out;
  s.sh = g.rows.stride;
  s.sw = g.cols.stride;
  s.ph = g.rows.pad;
  s.pw = g.cols.pad;
  // The total padding TensorFlow puts on a dimension: (out - 1) * stride + k - in
  // (VALID: none), of which pad goes before and the rest after.
  auto extra = [](const WindowDim& d) {
    const int64_t total = std::max<int64_t>(0, (d.out - 1) * d.stride + d.k - d.in);
    return d.out == 0 ? 0 : total - 2 * d.pad;
  };
  s.eh = extra(g.rows);
  s.ew = extra(g.cols);
  return s;
}

// The forward convolution whose output is the (padded) input gradient of `s`
// (see the file comment): input dy [n, oh, ow, o], filter [kh, kw, o, c] (the
// turned filter: conv_filter_flip.h), output [n, padded_h, padded_w, c].
// nullopt unless both strides are 1 and the padding is at most k - 1.
inline std::optional<ConvShape> InputGradientAsForward(const ConvShape& s) {
  if (s.sh != 1 || s.sw != 1 || s.ph > s.kh - 1 || s.pw > s.kw - 1 || s.ph < 0 || s.pw < 0) return std::nullopt;
  ConvShape f;
  f.n = s.n;
  f.h = s.oh;
  f.w = s.ow;
  f.c = s.o;
  f.kh = s.kh;
  f.kw = s.kw;
  f.o = s.c;
  f.oh = s.padded_h();
  f.ow = s.padded_w();
  f.sh = 1;
  f.sw = 1;
  f.ph = s.kh - 1 - s.ph;
  f.pw = s.kw - 1 - s.pw;
  f.eh = 0;
  f.ew = 0;
  // Stride 1: oh = padded_h + 2 ph - kh + 1, so the forward output is
  // oh + 2 (kh - 1 - ph) - kh + 1 = padded_h rows (cuDNN checks it again).
  if (f.h + 2 * f.ph - f.kh + 1 != f.oh || f.w + 2 * f.pw - f.kw + 1 != f.ow) return std::nullopt;
  return f;
}

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_CONV_CUDNN_SHAPE_H_
