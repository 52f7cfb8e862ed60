// See winograd_conv.h. The transforms (points 0, +-1, +-2, infinity; derived
// by Toom-Cook interpolation and checked exactly in rational arithmetic):
//
//   input  B^T (6x6), shared:    [4  0 -5  0  1  0]
//                                [0  4  4 -1 -1  0]
//                                [0 -4  4  1 -1  0]
//                                [0 -2 -1  2  1  0]
//                                [0  2 -1 -2  1  0]
//                                [0  4  0 -5  0  1]
//   5x5 filters, F(2, 5): filter G (6x5, kForwardG5) and output A^T (2x6,
//     OutputTransform1D<2>); F(5, 2) for the filter gradient: output gradient
//     G' (6x2, GradientTransform1D<2>) and filter gradient A'^T (5x6,
//     kFilterGradAT5).
//   3x3 filters, F(4, 3): G (6x3, kForwardG3), A^T (4x6, OutputTransform1D<4>);
//     F(3, 4): G' (6x4, GradientTransform1D<4>), A'^T (3x6, kFilterGradAT3).
// With these points every G is s_p * point_p^j (s = 1/4, 1/6, 1/6, 1/24, 1/24
// for the points 0, 1, -1, 2, -2; the last row picks the last element) and
// every A^T is point_p^i (the last column adding the last point to the last
// output), so one B^T serves each pair.
// A 2-D transform applies the 1-D one to the columns, then to the rows:
// V = B^T d B, U = G w G^T, y = A^T (U . V) A.
//
// Layout of the transformed domain: a block of `tiles` tiles holds
// V[tile][p][channel] and M[tile][p][out channel] (p = 6 * i + j, the 36
// points), so each tile's transform reads or writes one contiguous run (with
// the point outermost, each of its 36 vectors went to another cache line, and
// the transforms took twice as long); the product of point p reads every
// 36th row. The transformed filter is U[p][in][out]. Channel counts are
// rounded up to the vector width (kLanes) with zeros, so every product runs
// on whole vectors.
#include "engine/kernels/winograd_conv.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

#include "engine/kernels/float_vec.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace winograd {
namespace {

std::atomic<int64_t> g_runs{0};

constexpr int kAlpha = 6;                  // side of a transformed tile
constexpr int kPoints = kAlpha * kAlpha;   // 36

// The side of the output block a tile gives for a K x K filter: 2 for 5x5,
// 4 for 3x3.
template <int K>
constexpr int OutSide() {
  return kAlpha - K + 1;
}

// ---- Vectors (float_vec.h) ----

using simd::Fma;
using simd::kLanes;
using simd::Load;
using simd::LoadPartial;
using simd::Max0;
using simd::PrefetchRun;
using simd::Splat;
using simd::Store;
using simd::StorePartial;
using simd::Vec;
using simd::Zero;

// Product tiles: at most this many vectors of columns, and of accumulators
// (a few registers left for the loads of b and the broadcast of a).
#if defined(__AVX512F__)
constexpr int kMaxVectors = 4;
constexpr int kAccumulators = 24;
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kMaxVectors = 2;
constexpr int kAccumulators = 12;
#else
constexpr int kMaxVectors = 2;
constexpr int kAccumulators = 8;
#endif

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t CeilDiv(int64_t x, int64_t m) { return (x + m - 1) / m; }

// ---- The transforms ----

constexpr float kForwardG5[kAlpha][5] = {
    {1.0f / 4, 0, 0, 0, 0},
    {1.0f / 6, 1.0f / 6, 1.0f / 6, 1.0f / 6, 1.0f / 6},
    {1.0f / 6, -1.0f / 6, 1.0f / 6, -1.0f / 6, 1.0f / 6},
    {1.0f / 24, 1.0f / 12, 1.0f / 6, 1.0f / 3, 2.0f / 3},
    {1.0f / 24, -1.0f / 12, 1.0f / 6, -1.0f / 3, 2.0f / 3},
    {0, 0, 0, 0, 1},
};
constexpr float kFilterGradAT5[5][kAlpha] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 0}, {0, 1, 1, 16, 16, 1},
};
constexpr float kForwardG3[kAlpha][3] = {
    {1.0f / 4, 0, 0},
    {1.0f / 6, 1.0f / 6, 1.0f / 6},
    {1.0f / 6, -1.0f / 6, 1.0f / 6},
    {1.0f / 24, 1.0f / 12, 1.0f / 6},
    {1.0f / 24, -1.0f / 12, 1.0f / 6},
    {0, 0, 1},
};
constexpr float kFilterGradAT3[3][kAlpha] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 1}};

// The matrices of a K x K filter's transforms.
template <int K>
struct Matrices;
template <>
struct Matrices<5> {
  static constexpr const float (&kG)[kAlpha][5] = kForwardG5;
  static constexpr const float (&kGradAT)[5][kAlpha] = kFilterGradAT5;
};
template <>
struct Matrices<3> {
  static constexpr const float (&kG)[kAlpha][3] = kForwardG3;
  static constexpr const float (&kGradAT)[3][kAlpha] = kFilterGradAT3;
};

// B^T applied to six vectors (in place of the column or row they came from).
inline void InputTransform1D(const Vec d[kAlpha], Vec o[kAlpha]) {
  const Vec four = Splat(4.0f), five = Splat(5.0f), two = Splat(2.0f);
  o[0] = Fma(four, d[0], d[4]) - five * d[2];
  o[1] = Fma(four, d[1] + d[2], -(d[3] + d[4]));
  o[2] = Fma(four, d[2] - d[1], d[3] - d[4]);
  o[3] = Fma(two, d[3] - d[1], d[4] - d[2]);
  o[4] = Fma(two, d[1] - d[3], d[4] - d[2]);
  o[5] = Fma(four, d[1], d[5]) - five * d[3];
}

// A^T of F(M, 7 - M) applied to six vectors: M outputs.
template <int M>
void OutputTransform1D(const Vec m[kAlpha], Vec y[M]);

// F(2, 5).
template <>
inline void OutputTransform1D<2>(const Vec m[kAlpha], Vec y[2]) {
  y[0] = m[0] + m[1] + m[2] + m[3] + m[4];
  y[1] = Fma(Splat(2.0f), m[3] - m[4], m[1] - m[2]) + m[5];
}

// F(4, 3): A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
template <>
inline void OutputTransform1D<4>(const Vec m[kAlpha], Vec y[4]) {
  const Vec sum12 = m[1] + m[2], diff12 = m[1] - m[2], sum34 = m[3] + m[4], diff34 = m[3] - m[4];
  y[0] = m[0] + sum12 + sum34;
  y[1] = Fma(Splat(2.0f), diff34, diff12);
  y[2] = Fma(Splat(4.0f), sum34, sum12);
  y[3] = Fma(Splat(8.0f), diff34, diff12) + m[5];
}

// G' of F(7 - M, M) applied to M vectors (a filter gradient's output
// gradient): six out.
template <int M>
void GradientTransform1D(const Vec g[M], Vec o[kAlpha]);

// F(3, 4): G' = [1/4 0 0 0; 1/6 1/6 1/6 1/6; 1/6 -1/6 1/6 -1/6;
// 1/24 1/12 1/6 1/3; 1/24 -1/12 1/6 -1/3; 0 0 0 1].
template <>
inline void GradientTransform1D<4>(const Vec g[4], Vec o[kAlpha]) {
  const Vec even = g[0] + g[2], odd = g[1] + g[3];
  const Vec low = Fma(Splat(4.0f), g[2], g[0]), high = Fma(Splat(8.0f), g[3], Splat(2.0f) * g[1]);
  o[0] = Splat(1.0f / 4) * g[0];
  o[1] = Splat(1.0f / 6) * (even + odd);
  o[2] = Splat(1.0f / 6) * (even - odd);
  o[3] = Splat(1.0f / 24) * (low + high);
  o[4] = Splat(1.0f / 24) * (low - high);
  o[5] = g[3];
}

// F(5, 2): G' = [1/4 0; 1/6 1/6; 1/6 -1/6; 1/24 1/12; 1/24 -1/12; 0 1].
template <>
inline void GradientTransform1D<2>(const Vec g[2], Vec o[kAlpha]) {
  const Vec sixth0 = Splat(1.0f / 6) * g[0], sixth1 = Splat(1.0f / 6) * g[1];
  const Vec a = Splat(1.0f / 24) * g[0], b = Splat(1.0f / 12) * g[1];
  o[0] = Splat(1.0f / 4) * g[0];
  o[1] = sixth0 + sixth1;
  o[2] = sixth0 - sixth1;
  o[3] = a + b;
  o[4] = a - b;
  o[5] = g[1];
}

// Where the channels of a tile sit: `lanes` valid channels of a vector.
struct Image {
  const float* data;  // [rows, cols, channels]
  int64_t rows, cols, channels;
};

// The input transform of a block's tiles, in the order they come. B^T d B is
// B^T applied down each of the window's 6 columns, then across each of the
// resulting 6 rows. The next tile of the same row of an image starts 2
// columns further (5x5 filters; 4 for 3x3) and shares 4 columns (2) with the
// last one: their column transforms are kept (in slots by column mod 6) and
// only the new ones are made, which takes a 5x5 filter's tile from 12
// one-dimensional transforms and 36 loads from the image to 8 and 12.
class InputTransform {
 public:
  // `cache` holds ColumnCacheFloats(padded) floats; `step`: the columns from
  // one tile of a row to the next (the output block's side).
  InputTransform(int64_t padded, float* cache, int step) : padded_(padded), step_(step), cache_(cache) {}

  static int64_t ColumnCacheFloats(int64_t padded) { return kAlpha * padded * kAlpha; }

  // V[p * point_stride + c] = (B^T d B)[p] for the 6x6 window of `image`
  // whose top left is (row0, col0) (zeros outside the image), channels
  // [0, padded).
  void Tile(const Image& image, int64_t row0, int64_t col0, float* v, int64_t point_stride) {
    const bool next = image.data == image_ && row0 == row0_ && col0 == col0_ + step_;
    for (int j = next ? kAlpha - step_ : 0; j < kAlpha; ++j) Column(image, row0, col0 + j);
    // The next tile's new columns, from memory while this one is transformed.
    for (int64_t x = col0 + kAlpha; x < col0 + kAlpha + step_ && x < image.cols; ++x) {
      for (int64_t y = std::max<int64_t>(row0, 0); y < std::min(row0 + kAlpha, image.rows); ++y) {
        PrefetchRun(image.data + (y * image.cols + x) * image.channels, image.channels);
      }
    }
    image_ = image.data;
    row0_ = row0;
    col0_ = col0;
    const float* slots[kAlpha];
    for (int j = 0; j < kAlpha; ++j) slots[j] = Slot(col0 + j);
    for (int64_t c0 = 0; c0 < padded_; c0 += kLanes) {
#pragma GCC unroll 6
      for (int i = 0; i < kAlpha; ++i) {
        Vec row[kAlpha], out[kAlpha];
#pragma GCC unroll 6
        for (int j = 0; j < kAlpha; ++j) row[j] = Load(slots[j] + i * padded_ + c0);
        InputTransform1D(row, out);
#pragma GCC unroll 6
        for (int j = 0; j < kAlpha; ++j) Store(v + (i * kAlpha + j) * point_stride + c0, out[j]);
      }
    }
  }

 private:
  // The slot of input column x: [6][padded], B^T applied down the column.
  float* Slot(int64_t x) { return cache_ + (((x % kAlpha) + kAlpha) % kAlpha) * kAlpha * padded_; }

  void Column(const Image& image, int64_t row0, int64_t x) {
    float* slot = Slot(x);
    const bool column_inside = x >= 0 && x < image.cols;
    const bool rows_inside = row0 >= 0 && row0 + kAlpha <= image.rows;
    for (int64_t c0 = 0; c0 < padded_; c0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, image.channels - c0);
      Vec column[kAlpha], out[kAlpha];
#pragma GCC unroll 6
      for (int i = 0; i < kAlpha; ++i) {
        const int64_t y = row0 + i;
        // An offset, not a pointer: outside the image (padding) no address is formed.
        const int64_t at = (y * image.cols + x) * image.channels + c0;
        if (column_inside && rows_inside && lanes == kLanes) {
          column[i] = Load(image.data + at);
        } else if (!column_inside || y < 0 || y >= image.rows || lanes <= 0) {
          column[i] = Zero();
        } else {
          column[i] = lanes == kLanes ? Load(image.data + at) : LoadPartial(image.data + at, lanes);
        }
      }
      InputTransform1D(column, out);
#pragma GCC unroll 6
      for (int i = 0; i < kAlpha; ++i) Store(slot + i * padded_ + c0, out[i]);
    }
  }

  const int64_t padded_;
  const int step_;
  float* const cache_;
  const float* image_ = nullptr;
  int64_t row0_ = 0, col0_ = 0;
};

// out = m x m^T for a constant R x C matrix m and a C x C block of vectors x
// (the 2-D transforms of a filter and of a filter gradient); zero entries of
// m cost nothing.
template <int R, int C>
void Sandwich(const float (&m)[R][C], const Vec (&x)[C][C], Vec (&out)[R][R]) {
  Vec t[R][C];  // m x
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 6
    for (int b = 0; b < C; ++b) {
      Vec s = Zero();
#pragma GCC unroll 6
      for (int a = 0; a < C; ++a) {
        if (m[i][a] != 0.0f) s = Fma(Splat(m[i][a]), x[a][b], s);
      }
      t[i][b] = s;
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 6
    for (int j = 0; j < R; ++j) {
      Vec s = Zero();
#pragma GCC unroll 6
      for (int b = 0; b < C; ++b) {
        if (m[j][b] != 0.0f) s = Fma(t[i][b], Splat(m[j][b]), s);
      }
      out[i][j] = s;
    }
  }
}

// U[p][c][k] (c < padded_in, k < padded_out, zeros in the padding) = (G w G^T)[p]
// for an HWIO K x K filter w [K, K, in, out].
template <int K>
void TransformFilter(const float* w, int64_t in, int64_t out, int64_t padded_in, int64_t padded_out, float* u) {
  std::fill(u, u + kPoints * padded_in * padded_out, 0.0f);
  for (int64_t c = 0; c < in; ++c) {
    for (int64_t k0 = 0; k0 < out; k0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, out - k0);
      Vec g[K][K];
#pragma GCC unroll 6
      for (int a = 0; a < K; ++a) {
#pragma GCC unroll 6
        for (int b = 0; b < K; ++b) {
          const float* at = w + ((a * K + b) * in + c) * out + k0;
          g[a][b] = lanes == kLanes ? Load(at) : LoadPartial(at, lanes);
        }
      }
      Vec transformed[kAlpha][kAlpha];
      Sandwich(Matrices<K>::kG, g, transformed);
#pragma GCC unroll 6
      for (int i = 0; i < kAlpha; ++i) {
#pragma GCC unroll 6
        for (int j = 0; j < kAlpha; ++j) Store(u + ((i * kAlpha + j) * padded_in + c) * padded_out + k0, transformed[i][j]);
      }
    }
  }
}

// ---- Products in the transformed domain ----

// c[r][k] (+)= sum_p a[r * a_row + p * a_step] * b[p * ldb + k] for r < R,
// k < NV * kLanes: R x NV vectors of accumulators in registers.
template <int R, int NV>
void ProductTile(int64_t depth, const float* a, int64_t a_row, int64_t a_step, const float* b, int64_t ldb, float* c,
                 int64_t ldc, bool accumulate) {
  // GCC's -O2 does not unroll these loops by itself, and the accumulators
  // then live in memory.
  Vec acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = accumulate ? Load(c + r * ldc + v * kLanes) : Zero();
  }
  for (int64_t p = 0; p < depth; ++p) {
    Vec bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = Load(b + p * ldb + v * kLanes);
    const float* ap = a + p * a_step;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const Vec av = Splat(ap[r * a_row]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = Fma(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) Store(c + r * ldc + v * kLanes, acc[r][v]);
  }
}

using ProductTileFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t, bool);

// Rows per tile with NV vectors of columns: as many as the accumulators allow.
constexpr int RowsFor(int vectors) { return std::min(12, kAccumulators / vectors); }

template <int NV, int... Rows>
constexpr std::array<ProductTileFn, sizeof...(Rows)> RowTable(std::integer_sequence<int, Rows...>) {
  return {&ProductTile<Rows + 1, NV>...};
}
template <int NV>
ProductTileFn TileFor(int rows) {
  static constexpr auto table = RowTable<NV>(std::make_integer_sequence<int, RowsFor(NV)>());
  return table[rows - 1];
}
ProductTileFn TileFor(int vectors, int rows) {
  switch (vectors) {
    case 1:
      return TileFor<1>(rows);
    case 2:
      return TileFor<2>(rows);
#if defined(__AVX512F__)
    case 3:
      return TileFor<3>(rows);
    case 4:
      return TileFor<4>(rows);
#endif
  }
  return nullptr;
}

// c[r][k] (+)= sum_p a(r, p) b[p][k] for r < rows, k < cols (a multiple of
// kLanes), with a(r, p) = a[r * a_row + p * a_step].
void Product(int64_t rows, int64_t cols, int64_t depth, const float* a, int64_t a_row, int64_t a_step, const float* b,
             int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  for (int64_t k0 = 0; k0 < cols; k0 += kMaxVectors * kLanes) {
    const int vectors = static_cast<int>(std::min<int64_t>(kMaxVectors, (cols - k0) / kLanes));
    // Rows spread evenly over the fewest tiles (32 rows: 6, 6, 5, 5, 5, 5
    // rather than five of 6 and one of 2, whose few accumulators leave the
    // FMA units waiting on loads).
    const int64_t tiles = CeilDiv(rows, RowsFor(vectors));
    for (int64_t tile = 0, r0 = 0; tile < tiles; ++tile) {
      const int r = static_cast<int>(rows / tiles + (tile < rows % tiles ? 1 : 0));
      TileFor(vectors, r)(depth, a + r0 * a_row, a_row, a_step, b + k0, ldb, c + r0 * ldc + k0, ldc, accumulate);
      r0 += r;
    }
  }
}

// ---- Blocks of tiles ----

// Bytes of a block's transformed tiles (and, for the filter gradient, its
// partial sums): most of a 1 MiB L2 cache, leaving room for the filter.
constexpr int64_t kBlockBytes = 576 * 1024;

// Tiles per block for `floats_per_tile` transformed floats per tile: a
// multiple of 12 (whole product tiles) between 12 and 240.
int64_t TilesPerBlock(int64_t floats_per_tile) {
  const int64_t fit = kBlockBytes / (floats_per_tile * static_cast<int64_t>(sizeof(float)));
  return std::clamp<int64_t>(fit / 12 * 12, 12, 240);
}

// A per-thread buffer that only grows (the blocks' transformed tiles).
float* ThreadBuffer(int64_t floats) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < floats) buffer.resize(static_cast<size_t>(floats));
  return buffer.data();
}

struct TileGrid {
  int64_t rows, cols;  // output blocks per image, down and across
  int64_t per_image() const { return rows * cols; }
};

template <int K>
TileGrid GridOf(const ConvDims& d) {
  return {CeilDiv(d.out_rows, OutSide<K>()), CeilDiv(d.out_cols, OutSide<K>())};
}

// y for tiles [first, last) of the forward convolution, u the transformed
// filter.
template <int K>
void ForwardTiles(const ConvDims& d, const float* x, const float* u, const float* bias, bool relu, float* y,
                  int64_t first, int64_t last, int64_t tiles_per_block) {
  const int64_t padded_in = RoundUp(d.in_channels, kLanes), padded_out = RoundUp(d.out_channels, kLanes);
  constexpr int kOut = OutSide<K>();
  const TileGrid grid = GridOf<K>(d);
  float* v = ThreadBuffer(kPoints * tiles_per_block * (padded_in + padded_out) +
                         InputTransform::ColumnCacheFloats(padded_in));
  float* m = v + kPoints * tiles_per_block * padded_in;
  InputTransform transform(padded_in, m + kPoints * tiles_per_block * padded_out, kOut);
  for (int64_t b0 = first; b0 < last; b0 += tiles_per_block) {
    const int64_t tiles = std::min(tiles_per_block, last - b0);
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t tile = b0 + t, n = tile / grid.per_image(), at = tile % grid.per_image();
      const int64_t ty = at / grid.cols, tx = at % grid.cols;
      const Image image{x + n * d.in_rows * d.in_cols * d.in_channels, d.in_rows, d.in_cols, d.in_channels};
      transform.Tile(image, ty * kOut - d.pad_top, tx * kOut - d.pad_left, v + t * kPoints * padded_in, padded_in);
    }
    for (int p = 0; p < kPoints; ++p) {
      Product(tiles, padded_out, padded_in, v + p * padded_in, kPoints * padded_in, 1, u + p * padded_in * padded_out,
              padded_out, m + p * padded_out, kPoints * padded_out, /*accumulate=*/false);
    }
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t tile = b0 + t, n = tile / grid.per_image(), at = tile % grid.per_image();
      const int64_t oy = at / grid.cols * kOut, ox = at % grid.cols * kOut;
      const int64_t out_rows = std::min<int64_t>(kOut, d.out_rows - oy), out_cols = std::min<int64_t>(kOut, d.out_cols - ox);
      float* out = y + ((n * d.out_rows + oy) * d.out_cols + ox) * d.out_channels;
      for (int64_t k0 = 0; k0 < d.out_channels; k0 += kLanes) {
        const int64_t lanes = std::min<int64_t>(kLanes, d.out_channels - k0);
        Vec s[kOut][kAlpha];  // A^T M, by rows
#pragma GCC unroll 6
        for (int j = 0; j < kAlpha; ++j) {
          Vec column[kAlpha], reduced[kOut];
#pragma GCC unroll 6
          for (int i = 0; i < kAlpha; ++i) column[i] = Load(m + (t * kPoints + i * kAlpha + j) * padded_out + k0);
          OutputTransform1D<kOut>(column, reduced);
#pragma GCC unroll 6
          for (int i = 0; i < kOut; ++i) s[i][j] = reduced[i];
        }
        const Vec b = bias == nullptr ? Zero() : lanes == kLanes ? Load(bias + k0) : LoadPartial(bias + k0, lanes);
#pragma GCC unroll 6
        for (int i = 0; i < out_rows; ++i) {
          Vec row[kOut];
          OutputTransform1D<kOut>(s[i], row);
#pragma GCC unroll 6
          for (int j = 0; j < out_cols; ++j) {
            Vec value = row[j];
            if (bias != nullptr) value = value + b;
            if (relu) value = Max0(value);
            float* to = out + (i * d.out_cols + j) * d.out_channels + k0;
            if (lanes == kLanes) {
              Store(to, value);
            } else {
              StorePartial(to, value, lanes);
            }
          }
        }
      }
    }
  }
}

// The partial filter gradient of tiles [first, last) added to acc
// ([36][padded_in][padded_out], transformed domain).
template <int K>
void FilterGradTiles(const ConvDims& d, const float* x, const float* dy, int64_t first, int64_t last,
                     int64_t tiles_per_block, float* acc) {
  const int64_t padded_in = RoundUp(d.in_channels, kLanes), padded_out = RoundUp(d.out_channels, kLanes);
  constexpr int kOut = OutSide<K>();
  const TileGrid grid = GridOf<K>(d);
  float* v = ThreadBuffer(kPoints * tiles_per_block * (padded_in + padded_out) +
                         InputTransform::ColumnCacheFloats(padded_in));
  float* g = v + kPoints * tiles_per_block * padded_in;
  InputTransform transform(padded_in, g + kPoints * tiles_per_block * padded_out, kOut);
  for (int64_t b0 = first; b0 < last; b0 += tiles_per_block) {
    const int64_t tiles = std::min(tiles_per_block, last - b0);
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t tile = b0 + t, n = tile / grid.per_image(), at = tile % grid.per_image();
      const int64_t oy = at / grid.cols * kOut, ox = at % grid.cols * kOut;
      const Image image{x + n * d.in_rows * d.in_cols * d.in_channels, d.in_rows, d.in_cols, d.in_channels};
      transform.Tile(image, oy - d.pad_top, ox - d.pad_left, v + t * kPoints * padded_in, padded_in);
      // G' dy G^T' of the tile's kOut x kOut output gradient (zeros past the edge).
      const float* dy_image = dy + n * d.out_rows * d.out_cols * d.out_channels;
      // The next tile's gradient in this row of tiles, from memory while
      // this one works.
      if (ox + kOut < d.out_cols) {
        const int64_t x = ox + kOut, run = std::min<int64_t>(kOut, d.out_cols - x) * d.out_channels;
        for (int i = 0; i < kOut; ++i) {
          const int64_t y = std::min(oy + i, d.out_rows - 1);
          PrefetchRun(dy_image + (y * d.out_cols + x) * d.out_channels, run);
        }
      }
      for (int64_t k0 = 0; k0 < padded_out; k0 += kLanes) {
        const int64_t lanes = std::min<int64_t>(kLanes, d.out_channels - k0);
        Vec e[kOut][kOut];
#pragma GCC unroll 6
        for (int i = 0; i < kOut; ++i) {
#pragma GCC unroll 6
          for (int j = 0; j < kOut; ++j) {
            const float* at_dy = dy_image + ((oy + i) * d.out_cols + ox + j) * d.out_channels + k0;
            if (oy + i >= d.out_rows || ox + j >= d.out_cols || lanes <= 0) {
              e[i][j] = Zero();
            } else {
              e[i][j] = lanes == kLanes ? Load(at_dy) : LoadPartial(at_dy, lanes);
            }
          }
        }
        Vec columns[kAlpha][kOut];  // G' e, by rows
#pragma GCC unroll 6
        for (int j = 0; j < kOut; ++j) {
          Vec column[kOut];
#pragma GCC unroll 6
          for (int i = 0; i < kOut; ++i) column[i] = e[i][j];
          Vec out[kAlpha];
          GradientTransform1D<kOut>(column, out);
#pragma GCC unroll 6
          for (int i = 0; i < kAlpha; ++i) columns[i][j] = out[i];
        }
#pragma GCC unroll 6
        for (int i = 0; i < kAlpha; ++i) {
          Vec out[kAlpha];
          GradientTransform1D<kOut>(columns[i], out);
#pragma GCC unroll 6
          for (int j = 0; j < kAlpha; ++j) Store(g + (t * kPoints + i * kAlpha + j) * padded_out + k0, out[j]);
        }
      }
    }
    // acc[p][c][k] += sum_t V[p][t][c] G[p][t][k]
    for (int p = 0; p < kPoints; ++p) {
      Product(padded_in, padded_out, tiles, v + p * padded_in, 1, kPoints * padded_in, g + p * padded_out,
              kPoints * padded_out, acc + p * padded_in * padded_out, padded_out, /*accumulate=*/true);
    }
  }
}

// dw [K, K, in, out] = A'^T acc A' (acc in the transformed domain).
template <int K>
void FilterGradOutput(const ConvDims& d, const float* acc, float* dw) {
  const int64_t padded_in = RoundUp(d.in_channels, kLanes), padded_out = RoundUp(d.out_channels, kLanes);
  for (int64_t c = 0; c < d.in_channels; ++c) {
    for (int64_t k0 = 0; k0 < d.out_channels; k0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, d.out_channels - k0);
      Vec sums[kAlpha][kAlpha], grad[K][K];
#pragma GCC unroll 6
      for (int i = 0; i < kAlpha; ++i) {
#pragma GCC unroll 6
        for (int j = 0; j < kAlpha; ++j) sums[i][j] = Load(acc + ((i * kAlpha + j) * padded_in + c) * padded_out + k0);
      }
      Sandwich(Matrices<K>::kGradAT, sums, grad);
#pragma GCC unroll 6
      for (int a = 0; a < K; ++a) {
#pragma GCC unroll 6
        for (int b = 0; b < K; ++b) {
          float* to = dw + ((a * K + b) * d.in_channels + c) * d.out_channels + k0;
          if (lanes == kLanes) {
            Store(to, grad[a][b]);
          } else {
            StorePartial(to, grad[a][b], lanes);
          }
        }
      }
    }
  }
}

template <int K>
int64_t TileCount(const ConvDims& d) {
  return d.batch * GridOf<K>(d).per_image();
}

// Rough cycles per tile, for ParallelForRanges' cut.
int64_t CostPerTile(const ConvDims& d) {
  return kPoints * RoundUp(d.in_channels, kLanes) * RoundUp(d.out_channels, kLanes) / kLanes + 1;
}

int64_t TilesPerBlockFor(const ConvDims& d) {
  return TilesPerBlock(kPoints * (RoundUp(d.in_channels, kLanes) + RoundUp(d.out_channels, kLanes)));
}

// The forward convolution with a filter already in the transformed domain.
template <int K>
void ForwardTransformed(const ConvDims& d, const float* x, const float* u, const float* bias, bool relu, float* y,
                        const Threads& threads) {
  const int64_t per_block = TilesPerBlockFor(d);
  ParallelForRanges(threads.pool, threads.count, TileCount<K>(d), CostPerTile(d), per_block, [&](int64_t first, int64_t last) {
    ForwardTiles<K>(d, x, u, bias, relu, y, first, last, per_block);
  });
}

template <int K>
void ForwardK(const ConvDims& d, const float* x, const float* w, const float* bias, bool relu, float* y,
              const Threads& threads) {
  const int64_t padded_in = RoundUp(d.in_channels, kLanes), padded_out = RoundUp(d.out_channels, kLanes);
  std::vector<float> u(static_cast<size_t>(kPoints * padded_in * padded_out));
  TransformFilter<K>(w, d.in_channels, d.out_channels, padded_in, padded_out, u.data());
  ForwardTransformed<K>(d, x, u.data(), bias, relu, y, threads);
}

template <int K>
void BackpropInputK(const ConvDims& d, const float* w, const float* dy, float* dx, const Threads& threads) {
  const ConvDims b = BackpropDims(d);
  // The filter turned 180 degrees, its channels swapped: [K, K, out, in].
  const int64_t in = d.in_channels, out = d.out_channels;
  std::vector<float> turned(static_cast<size_t>(K * K * in * out));
  for (int a = 0; a < K; ++a) {
    for (int c = 0; c < K; ++c) {
      const float* from = w + ((K - 1 - a) * K + (K - 1 - c)) * in * out;
      float* to = turned.data() + (a * K + c) * in * out;
      for (int64_t i = 0; i < in; ++i) {
        for (int64_t k = 0; k < out; ++k) to[k * in + i] = from[i * out + k];
      }
    }
  }
  const int64_t padded_in = RoundUp(b.in_channels, kLanes), padded_out = RoundUp(b.out_channels, kLanes);
  std::vector<float> u(static_cast<size_t>(kPoints * padded_in * padded_out));
  TransformFilter<K>(turned.data(), b.in_channels, b.out_channels, padded_in, padded_out, u.data());
  ForwardTransformed<K>(b, dy, u.data(), nullptr, false, dx, threads);
}

template <int K>
void BackpropFilterK(const ConvDims& d, const float* x, const float* dy, float* dw, const Threads& threads) {
  const int64_t padded_in = RoundUp(d.in_channels, kLanes), padded_out = RoundUp(d.out_channels, kLanes);
  const int64_t tiles = TileCount<K>(d), per_block = TilesPerBlockFor(d);
  const int64_t acc_floats = kPoints * padded_in * padded_out;
  // One partial sum per range; ranges (not threads) fix the summation order.
  const int64_t blocks = CeilDiv(tiles, per_block);
  const int64_t ranges = std::max<int64_t>(1, std::min<int64_t>(std::max(threads.count, 1), blocks));
  std::vector<float> acc(static_cast<size_t>(ranges * acc_floats), 0.0f);
  RunTasks(threads.count > 1 ? threads.pool : nullptr, ranges, [&](int64_t r) {
    const int64_t first = std::min(tiles, blocks * r / ranges * per_block);
    const int64_t last = std::min(tiles, blocks * (r + 1) / ranges * per_block);
    if (first < last) FilterGradTiles<K>(d, x, dy, first, last, per_block, acc.data() + r * acc_floats);
  });
  for (int64_t r = 1; r < ranges; ++r) {
    const float* from = acc.data() + r * acc_floats;
    for (int64_t i = 0; i < acc_floats; ++i) acc[static_cast<size_t>(i)] += from[i];
  }
  FilterGradOutput<K>(d, acc.data(), dw);
}

}  // namespace

int64_t Runs() { return g_runs.load(std::memory_order_relaxed); }

bool Worthwhile(const ConvDims& d) {
  if (d.filter != 3 && d.filter != 5) return false;
  if (d.batch <= 0 || d.in_rows <= 0 || d.in_cols <= 0 || d.out_rows <= 0 || d.out_cols <= 0) return false;
  // Fewer channels than a vector: most of each product would be padding.
  if (d.in_channels < 16 || d.out_channels < 16) return false;
  const int64_t pad_bottom = d.out_rows + d.filter - 1 - d.in_rows - d.pad_top;
  const int64_t pad_right = d.out_cols + d.filter - 1 - d.in_cols - d.pad_left;
  auto ok = [&](int64_t pad) { return pad >= 0 && pad < d.filter; };
  return ok(d.pad_top) && ok(d.pad_left) && ok(pad_bottom) && ok(pad_right);
}

ConvDims BackpropDims(const ConvDims& d) {
  ConvDims b;
  b.filter = d.filter;
  b.batch = d.batch;
  b.in_rows = d.out_rows;
  b.in_cols = d.out_cols;
  b.in_channels = d.out_channels;
  b.out_rows = d.in_rows;
  b.out_cols = d.in_cols;
  b.out_channels = d.in_channels;
  b.pad_top = d.filter - 1 - d.pad_top;
  b.pad_left = d.filter - 1 - d.pad_left;
  return b;
}

void Forward(const ConvDims& d, const float* x, const float* w, const float* bias, bool relu, float* y,
             const Threads& threads) {
  g_runs.fetch_add(1, std::memory_order_relaxed);
  if (d.filter == 3) {
    ForwardK<3>(d, x, w, bias, relu, y, threads);
  } else {
    ForwardK<5>(d, x, w, bias, relu, y, threads);
  }
}

void BackpropInput(const ConvDims& d, const float* w, const float* dy, float* dx, const Threads& threads) {
  g_runs.fetch_add(1, std::memory_order_relaxed);
  if (d.filter == 3) {
    BackpropInputK<3>(d, w, dy, dx, threads);
  } else {
    BackpropInputK<5>(d, w, dy, dx, threads);
  }
}

void BackpropFilter(const ConvDims& d, const float* x, const float* dy, float* dw, const Threads& threads) {
  g_runs.fetch_add(1, std::memory_order_relaxed);
  if (d.filter == 3) {
    BackpropFilterK<3>(d, x, dy, dw, threads);
  } else {
    BackpropFilterK<5>(d, x, dy, dw, threads);
  }
}

}  // namespace winograd
}  // namespace sluice
