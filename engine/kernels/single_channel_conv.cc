// See single_channel_conv.h.
#include "engine/kernels/single_channel_conv.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "engine/kernels/float_vec.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace single_channel {
namespace {

using simd::Fma;
using simd::kLanes;
using simd::kRegisters;
using simd::Load;
using simd::Max0;
using simd::Splat;
using simd::Store;
using simd::Vec;
using simd::Zero;

constexpr int kMaxFilter = 11;
constexpr int kMaxVectors = 2;  // output channels per tile, in vectors
// Rows of a register tile (output pixels, or taps) for `vectors` vectors of
// channels: every register but those for the loads of a row and a broadcast.
constexpr int TileRowsFor(int vectors) { return (kRegisters - vectors - 2) / vectors; }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The padded plane of one image: the input at (pad_top, pad_left) of a
// zeroed (OH + KH - 1) x (OW + KW - 1) plane, so that output (i, j) reads
// plane rows i .. i + KH - 1 and columns j .. j + KW - 1.
struct PlaneShape {
  int64_t rows, cols;
};

PlaneShape PlaneOf(const ConvGeometry& g) {
  return {g.rows.out + g.filter_rows - 1, g.cols.out + g.filter_cols - 1};
}

// A per-thread plane buffer that only grows.
float* ThreadPlane(int64_t floats) {
  thread_local std::vector<float> plane;
  if (static_cast<int64_t>(plane.size()) < floats) plane.resize(static_cast<size_t>(floats));
  return plane.data();
}

void Pad(const ConvGeometry& g, const float* image, const PlaneShape& p, float* plane) {
  std::fill(plane, plane + p.rows * p.cols, 0.0f);
  for (int64_t y = 0; y < g.in_rows; ++y) {
    const int64_t row = y + g.rows.pad;
    if (row < 0 || row >= p.rows) continue;
    for (int64_t x = 0; x < g.in_cols; ++x) {
      const int64_t col = x + g.cols.pad;
      if (col >= 0 && col < p.cols) plane[row * p.cols + col] = image[y * g.in_cols + x];
    }
  }
}

// ---- Forward: P output pixels of one row x NV vectors of channels ----

struct ForwardArgs {
  const float* plane;  // the tile's first pixel's window corner
  int64_t plane_cols;
  int kh, kw;
  const float* w;  // the filter at the tile's first channel; rows of `out`
  int64_t out;
  const float* bias;  // at the tile's first channel, or null
  bool relu;
  float* y;  // the tile's first pixel and channel; pixels `out` apart
};

template <int P, int NV>
void ForwardTile(const ForwardArgs& f) {
  Vec acc[P][NV];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[p][v] = Zero();
  }
  for (int a = 0; a < f.kh; ++a) {
    const float* row = f.plane + a * f.plane_cols;
    const float* w_row = f.w + a * f.kw * f.out;
    for (int b = 0; b < f.kw; ++b) {
      Vec wv[NV];
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) wv[v] = Load(w_row + b * f.out + v * kLanes);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const Vec xv = Splat(row[p + b]);
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) acc[p][v] = Fma(xv, wv[v], acc[p][v]);
      }
    }
  }
  Vec bias[NV];
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) bias[v] = f.bias != nullptr ? Load(f.bias + v * kLanes) : Zero();
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      Vec value = acc[p][v];
      if (f.bias != nullptr) value = value + bias[v];
      if (f.relu) value = Max0(value);
      Store(f.y + p * f.out + v * kLanes, value);
    }
  }
}

// ---- Filter gradient: G taps x NV vectors of channels, over one image ----

struct FilterGradArgs {
  const float* plane;
  int64_t plane_cols;
  const int64_t* offsets;  // the G taps' offsets in the plane (a * plane_cols + b)
  int64_t out_rows, out_cols;
  const float* dy;  // the image's gradient at the tile's first channel; pixels `out` apart
  int64_t out;
  float* dw;  // the first tap's row at the tile's first channel; taps `out` apart (added to)
};

template <int G, int NV>
void FilterGradTile(const FilterGradArgs& f) {
  Vec acc[G][NV];
#pragma GCC unroll 16
  for (int t = 0; t < G; ++t) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[t][v] = Zero();
  }
  for (int64_t i = 0; i < f.out_rows; ++i) {
    const float* row = f.plane + i * f.plane_cols;
    const float* d_row = f.dy + i * f.out_cols * f.out;
    for (int64_t j = 0; j < f.out_cols; ++j) {
      Vec dv[NV];
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) dv[v] = Load(d_row + j * f.out + v * kLanes);
#pragma GCC unroll 16
      for (int t = 0; t < G; ++t) {
        const Vec xv = Splat(row[j + f.offsets[t]]);
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) acc[t][v] = Fma(xv, dv[v], acc[t][v]);
      }
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < G; ++t) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      float* at = f.dw + t * f.out + v * kLanes;
      Store(at, Load(at) + acc[t][v]);
    }
  }
}

// Tile functions by (vectors, rows): rows 1 .. TileRowsFor(vectors).
using ForwardFn = void (*)(const ForwardArgs&);
using FilterGradFn = void (*)(const FilterGradArgs&);

template <int NV, int... Rows>
constexpr std::array<ForwardFn, sizeof...(Rows)> ForwardRow(std::integer_sequence<int, Rows...>) {
  return {&ForwardTile<Rows + 1, NV>...};
}
template <int NV, int... Rows>
constexpr std::array<FilterGradFn, sizeof...(Rows)> FilterGradRow(std::integer_sequence<int, Rows...>) {
  return {&FilterGradTile<Rows + 1, NV>...};
}

ForwardFn ForwardTileFor(int vectors, int rows) {
  static constexpr auto one = ForwardRow<1>(std::make_integer_sequence<int, TileRowsFor(1)>());
  static constexpr auto two = ForwardRow<2>(std::make_integer_sequence<int, TileRowsFor(2)>());
  return vectors == 1 ? one[rows - 1] : two[rows - 1];
}
FilterGradFn FilterGradTileFor(int vectors, int rows) {
  static constexpr auto one = FilterGradRow<1>(std::make_integer_sequence<int, TileRowsFor(1)>());
  static constexpr auto two = FilterGradRow<2>(std::make_integer_sequence<int, TileRowsFor(2)>());
  return vectors == 1 ? one[rows - 1] : two[rows - 1];
}

// Splits [0, n) into the fewest pieces of at most `most`, as even as can be:
// calls fn(first, count) for each.
template <typename Fn>
void EvenPieces(int64_t n, int64_t most, const Fn& fn) {
  const int64_t pieces = CeilDiv(n, most);
  for (int64_t i = 0, first = 0; i < pieces; ++i) {
    const int64_t count = n / pieces + (i < n % pieces ? 1 : 0);
    fn(first, count);
    first += count;
  }
}

// Chunks of images for the filter gradient: fixed, so that the sum's order
// does not depend on the thread count.
constexpr int64_t kFilterChunks = 16;

}  // namespace

bool Applies(const ConvGeometry& g) {
  return g.in_depth == 1 && g.rows.stride == 1 && g.cols.stride == 1 && g.out_depth % 16 == 0 &&
         g.filter_rows >= 1 && g.filter_rows <= kMaxFilter && g.filter_cols >= 1 && g.filter_cols <= kMaxFilter &&
         g.batch > 0 && g.rows.out > 0 && g.cols.out > 0 && g.out_depth > 0 && g.rows.pad >= 0 && g.cols.pad >= 0;
}

void Forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, bool relu, float* y,
             Eigen::ThreadPoolInterface* pool, int threads) {
  const PlaneShape p = PlaneOf(g);
  const int64_t out = g.out_depth, image_in = g.in_rows * g.in_cols, image_out = g.out_pixels() * out;
  const int64_t cost = image_out * g.filter_rows * g.filter_cols / kLanes + 1;
  ParallelForRanges(pool, threads, g.batch, cost, 1, [&](int64_t first, int64_t last) {
    float* plane = ThreadPlane(p.rows * p.cols);
    for (int64_t n = first; n < last; ++n) {
      Pad(g, x + n * image_in, p, plane);
      for (int64_t k0 = 0; k0 < out; k0 += kMaxVectors * kLanes) {
        const int vectors = static_cast<int>(std::min<int64_t>(kMaxVectors, (out - k0) / kLanes));
        ForwardArgs f;
        f.plane_cols = p.cols;
        f.kh = static_cast<int>(g.filter_rows);
        f.kw = static_cast<int>(g.filter_cols);
        f.w = w + k0;
        f.out = out;
        f.bias = bias != nullptr ? bias + k0 : nullptr;
        f.relu = relu;
        for (int64_t i = 0; i < g.rows.out; ++i) {
          EvenPieces(g.cols.out, TileRowsFor(vectors), [&](int64_t j, int64_t count) {
            f.plane = plane + i * p.cols + j;
            f.y = y + n * image_out + (i * g.cols.out + j) * out + k0;
            ForwardTileFor(vectors, static_cast<int>(count))(f);
          });
        }
      }
    }
  });
}

void BackpropFilter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                    Eigen::ThreadPoolInterface* pool, int threads) {
  const PlaneShape p = PlaneOf(g);
  const int64_t out = g.out_depth, taps = g.filter_rows * g.filter_cols;
  const int64_t image_in = g.in_rows * g.in_cols, image_out = g.out_pixels() * out;
  std::vector<int64_t> offsets(static_cast<size_t>(taps));
  for (int64_t a = 0; a < g.filter_rows; ++a) {
    for (int64_t b = 0; b < g.filter_cols; ++b) offsets[a * g.filter_cols + b] = a * p.cols + b;
  }
  const int64_t chunks = std::min(kFilterChunks, g.batch);
  std::vector<float> partial(static_cast<size_t>(chunks * taps * out), 0.0f);
  RunTasks(threads > 1 ? pool : nullptr, chunks, [&](int64_t c) {
    float* plane = ThreadPlane(p.rows * p.cols);
    float* sums = partial.data() + c * taps * out;
    for (int64_t n = g.batch * c / chunks; n < g.batch * (c + 1) / chunks; ++n) {
      Pad(g, x + n * image_in, p, plane);
      for (int64_t k0 = 0; k0 < out; k0 += kMaxVectors * kLanes) {
        const int vectors = static_cast<int>(std::min<int64_t>(kMaxVectors, (out - k0) / kLanes));
        FilterGradArgs f;
        f.plane = plane;
        f.plane_cols = p.cols;
        f.out_rows = g.rows.out;
        f.out_cols = g.cols.out;
        f.dy = dy + n * image_out + k0;
        f.out = out;
        EvenPieces(taps, TileRowsFor(vectors), [&](int64_t t, int64_t count) {
          f.offsets = offsets.data() + t;
          f.dw = sums + t * out + k0;
          FilterGradTileFor(vectors, static_cast<int>(count))(f);
        });
      }
    }
  });
  std::copy(partial.begin(), partial.begin() + taps * out, dw);
  for (int64_t c = 1; c < chunks; ++c) {
    const float* from = partial.data() + c * taps * out;
    for (int64_t i = 0; i < taps * out; ++i) dw[i] += from[i];
  }
}

}  // namespace single_channel
}  // namespace sluice
