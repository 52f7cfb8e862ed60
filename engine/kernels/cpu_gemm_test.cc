// CpuGemm against a float64 reference: every transpose combination, edge
// sizes around the tiles (8 x 32 with AVX-512, 6 x 16 with AVX2) and the cache blocks, padded leading
// dimensions, accumulation, k == 0, and thread counts 1..4 (results must be
// bitwise identical across thread counts, and calls from inside the pool must
// not deadlock); the bias + relu epilogue against the plain product followed
// by a separate bias and relu pass. Built twice (BUILD): with the build's own
// micro-kernel (AVX-512 on a machine that has it) and as cpu_gemm_avx2_test
// with CpuGemm compiled without AVX-512 (the AVX2 + FMA kernel).
#include "engine/kernels/cpu_gemm.h"
#include "engine/kernels/cpu_gemm_small.h"
#include "engine/kernels/float_vec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

struct Problem {
  int64_t m, n, k;
  bool ta, tb;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0;  // extra row stride
};

struct Operands {
  std::vector<float> a, b;
  int64_t lda, ldb, ldc;
};

Operands MakeOperands(const Problem& p, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Operands o;
  const int64_t a_rows = p.ta ? p.k : p.m, a_cols = p.ta ? p.m : p.k;
  const int64_t b_rows = p.tb ? p.n : p.k, b_cols = p.tb ? p.k : p.n;
  o.lda = a_cols + p.pad_a;
  o.ldb = b_cols + p.pad_b;
  o.ldc = p.n + p.pad_c;
  o.a.resize(std::max<int64_t>(1, a_rows * o.lda));
  o.b.resize(std::max<int64_t>(1, b_rows * o.ldb));
  for (float& x : o.a) x = u(rng);
  for (float& x : o.b) x = u(rng);
  return o;
}

// The product `p` on operands `o` into `c` (m x ldc); with `packed_b`, op(B)
// as PackGemmB laid it out instead of o.b.
GemmArgs ArgsFor(const Problem& p, const Operands& o, std::vector<float>* c, bool accumulate,
                 const float* packed_b = nullptr) {
  GemmArgs g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.a = o.a.data();
  g.lda = o.lda;
  g.transpose_a = p.ta;
  g.b = packed_b != nullptr ? nullptr : o.b.data();  // the packed copy must be what is read
  g.ldb = o.ldb;
  g.transpose_b = p.tb;
  g.c = c->data();
  g.ldc = o.ldc;
  g.accumulate = accumulate;
  g.packed_b = packed_b;
  return g;
}

// Runs CpuGemm on `c` (m x ldc, prefilled by the caller).
void RunGemm(const Problem& p, const Operands& o, std::vector<float>* c, bool accumulate,
             Eigen::ThreadPoolInterface* pool, int threads, const float* packed_b = nullptr) {
  CpuGemm(ArgsFor(p, o, c, accumulate, packed_b), pool, threads);
}

// Checks c against initial + op(A) op(B) in float64; every element within
// 1e-5 of the sum of |products| (float rounding over k terms stays far below).
void ExpectMatchesReference(const Problem& p, const Operands& o, const std::vector<float>& initial,
                            const std::vector<float>& c, const std::string& what) {
  int bad = 0;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = initial[i * o.ldc + j], abs_sum = std::fabs(initial[i * o.ldc + j]);
      for (int64_t q = 0; q < p.k; ++q) {
        const double x = p.ta ? o.a[q * o.lda + i] : o.a[i * o.lda + q];
        const double y = p.tb ? o.b[j * o.ldb + q] : o.b[q * o.ldb + j];
        sum += x * y;
        abs_sum += std::fabs(x * y);
      }
      const double got = c[i * o.ldc + j];
      if (!(std::fabs(got - sum) <= 1e-5 * abs_sum + 1e-30) && bad++ < 5) {
        ADD_FAILURE() << what << " C(" << i << "," << j << ") = " << got << ", want " << sum;
      }
    }
  }
  // Padding columns of C are never written.
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = p.n; j < o.ldc; ++j) {
      ASSERT_EQ(c[i * o.ldc + j], initial[i * o.ldc + j]) << what << " wrote padding at (" << i << "," << j << ")";
    }
  }
}

std::string Describe(const Problem& p) {
  return absl::StrCat("m=", p.m, " n=", p.n, " k=", p.k, " ta=", p.ta, " tb=", p.tb, " pads=", p.pad_a, "/",
                      p.pad_b, "/", p.pad_c);
}

TEST(CpuGemmTest, MatchesReferenceOnEdgeShapesAndTransposes) {
  Eigen::ThreadPool pool(3);
  const int64_t sizes[] = {1, 5, 6, 7, 8, 9, 15, 16, 17, 31, 33};
  const int64_t ks[] = {1, 8, 9, 257};
  uint32_t seed = 1;
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : ks) {
        for (int t = 0; t < 4; ++t) {
          Problem p{m, n, k, (t & 1) != 0, (t & 2) != 0, (m + k) % 3, (n + k) % 2, m % 2};
          const Operands o = MakeOperands(p, seed++);
          std::vector<float> initial(p.m * o.ldc, -7.0f);
          std::vector<float> c = initial;
          RunGemm(p, o, &c, /*accumulate=*/false, &pool, 4);
          std::vector<float> zeros(c.size(), 0.0f);
          for (int64_t i = 0; i < p.m; ++i) {
            for (int64_t j = p.n; j < o.ldc; ++j) zeros[i * o.ldc + j] = -7.0f;
          }
          ExpectMatchesReference(p, o, zeros, c, Describe(p));
        }
      }
    }
  }
}

TEST(CpuGemmTest, AccumulatesIntoC) {
  Eigen::ThreadPool pool(2);
  for (int t = 0; t < 4; ++t) {
    Problem p{37, 45, 300, (t & 1) != 0, (t & 2) != 0, 3, 1, 2};
    const Operands o = MakeOperands(p, 100 + t);
    std::vector<float> initial(p.m * o.ldc);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    for (float& x : initial) x = u(rng);
    std::vector<float> c = initial;
    RunGemm(p, o, &c, /*accumulate=*/true, &pool, 2);
    ExpectMatchesReference(p, o, initial, c, "accumulate " + Describe(p));
  }
}

TEST(CpuGemmTest, LargeBlocksCrossEveryCacheBlockBoundary) {
  Eigen::ThreadPool pool(2);
  // m > kMc, n > kNc, k > 2 * kKc (kKc is 512 with AVX-512, 256 otherwise),
  // none a multiple of its block.
  Problem p{151, 2081, 1100, false, true, 0, 0, 0};
  const Operands o = MakeOperands(p, 42);
  std::vector<float> c(p.m * o.ldc, 1.0f);
  RunGemm(p, o, &c, false, &pool, 2);
  ExpectMatchesReference(p, o, std::vector<float>(c.size(), 0.0f), c, Describe(p));
}

TEST(CpuGemmTest, ZeroSizesAndEmptyInnerDimension) {
  Problem p{4, 18, 0, false, false};
  Operands o = MakeOperands(p, 3);
  std::vector<float> c(p.m * o.ldc, 5.0f);
  RunGemm(p, o, &c, /*accumulate=*/true, nullptr, 1);
  for (float x : c) ASSERT_EQ(x, 5.0f);
  RunGemm(p, o, &c, /*accumulate=*/false, nullptr, 1);
  for (float x : c) ASSERT_EQ(x, 0.0f);
  Problem empty{0, 9, 4, false, false};
  Operands e = MakeOperands(empty, 4);
  std::vector<float> none;
  RunGemm(empty, e, &none, false, nullptr, 1);  // must not touch C
}

TEST(CpuGemmTest, BitwiseIdenticalAcrossThreadCounts) {
  Eigen::ThreadPool pool(4);
  for (int t = 0; t < 4; ++t) {
    Problem p{130, 515, 700, (t & 1) != 0, (t & 2) != 0};
    const Operands o = MakeOperands(p, 9 + t);
    std::vector<float> one(p.m * o.ldc), many(p.m * o.ldc);
    RunGemm(p, o, &one, false, nullptr, 1);
    for (int threads : {2, 3, 4}) {
      RunGemm(p, o, &many, false, &pool, threads);
      ASSERT_EQ(one, many) << Describe(p) << " threads=" << threads;
    }
  }
}

// op(B) packed once by PackGemmB gives the same C, bit for bit, as B read by
// CpuGemm itself, for edge shapes, both layouts of B and several blocks of k
// and n, on 1 and 3 threads; and the packed B can be reused. The last four
// have a row-major B that CpuGemm packs as the first tile of each panel reads
// it (BBlock::fill: several blocks of rows, or one block with deep blocks of
// k), so the tiles after it read only what that tile stored: partial last
// panels, edge tiles of rows, padded strides.
TEST(CpuGemmTest, PrepackedBMatchesUnpacked) {
  Eigen::ThreadPool pool(3);
  const Problem problems[] = {{1, 1, 1, false, false},      {7, 17, 9, true, false},     {13, 33, 257, false, true},
                              {151, 2081, 530, true, true}, {150, 64, 800, false, false}, {40, 25, 700, true, false},
                              {64, 800, 1176, true, false, 3, 5, 2},
                              {300, 1000, 1100, false, false, 3, 5, 1}, {128, 1030, 3136, false, false},
                              {9, 70, 2000, true, false, 0, 2, 0},      {140, 2100, 40, false, false, 0, 0, 4}};
  uint32_t seed = 50;
  for (const Problem& p : problems) {
    const Operands o = MakeOperands(p, seed++);
    std::vector<float> packed(PackedGemmBFloats(p.k, p.n), -1.0f);
    PackGemmB(o.b.data(), o.ldb, p.tb, p.k, p.n, packed.data());
    for (int threads : {1, 3}) {
      std::vector<float> plain(p.m * o.ldc, 2.0f), prepacked(p.m * o.ldc, 2.0f);
      RunGemm(p, o, &plain, /*accumulate=*/true, &pool, threads);
      RunGemm(p, o, &prepacked, /*accumulate=*/true, &pool, threads, packed.data());
      ASSERT_EQ(plain, prepacked) << Describe(p) << " threads=" << threads;
      ExpectMatchesReference(p, o, std::vector<float>(plain.size(), 2.0f), prepacked, "prepacked " + Describe(p));
    }
  }
}

// The micro-kernel this binary was built to test (BUILD passes the name).
#ifdef SLUICE_EXPECT_GEMM_KERNEL
TEST(CpuGemmTest, BuiltWithTheExpectedMicroKernel) {
  EXPECT_STREQ(CpuGemmKernelName(), SLUICE_EXPECT_GEMM_KERNEL);
}
#endif

// The epilogue (bias per column, optional relu) gives, bit for bit, the plain
// product followed by C + bias and max(C, 0) as separate passes: edge tiles in
// both dimensions, several blocks of k and of n (so only the last block of k
// may apply it), every transpose, prepacked B, accumulation into C, k == 0,
// and 1 and 3 threads.
TEST(CpuGemmTest, BiasReluEpilogueMatchesSeparatePasses) {
  Eigen::ThreadPool pool(3);
  const Problem problems[] = {{1, 1, 1, false, false},        {5, 7, 3, false, false},    {7, 17, 9, true, false},
                              {13, 33, 257, false, true},     {6, 32, 128, false, false}, {19, 45, 300, true, true, 1, 2, 3},
                              {151, 2081, 530, false, false}, {40, 25, 0, false, false},  {130, 515, 700, false, true}};
  uint32_t seed = 200;
  for (const Problem& p : problems) {
    const Operands o = MakeOperands(p, seed++);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> bias(p.n);
    for (float& x : bias) x = u(rng);
    std::vector<float> initial(p.m * o.ldc);
    for (float& x : initial) x = u(rng);
    std::vector<float> packed(std::max<int64_t>(1, PackedGemmBFloats(p.k, p.n)));
    PackGemmB(o.b.data(), o.ldb, p.tb, p.k, p.n, packed.data());
    for (bool accumulate : {false, true}) {
      for (bool relu : {false, true}) {
        for (bool with_bias : {false, true}) {
          for (bool prepacked : {false, true}) {
            for (int threads : {1, 3}) {
              const std::string what = absl::StrCat(Describe(p), " accumulate=", accumulate, " relu=", relu,
                                                    " bias=", with_bias, " prepacked=", prepacked, " threads=",
                                                    threads);
              const float* pb = prepacked ? packed.data() : nullptr;
              std::vector<float> want = initial;
              RunGemm(p, o, &want, accumulate, &pool, threads, pb);
              int negatives = 0;
              for (int64_t i = 0; i < p.m; ++i) {
                for (int64_t j = 0; j < p.n; ++j) {
                  float& x = want[i * o.ldc + j];
                  if (with_bias) x = x + bias[j];
                  negatives += x < 0.0f;
                  if (relu) x = std::max(x, 0.0f);
                }
              }
              std::vector<float> got = initial;
              GemmArgs g = ArgsFor(p, o, &got, accumulate, pb);
              g.bias = with_bias ? bias.data() : nullptr;
              g.relu = relu;
              CpuGemm(g, &pool, threads);
              ASSERT_EQ(got, want) << what;
              // (got == want also covers the padding columns of C, left as they were.)
              // The case tests something: some sums are negative, so relu has work
              // (all are zero only for k == 0 without a bias or an initial C).
              if (p.m * p.n >= 16 && (p.k > 0 || accumulate || with_bias)) {
                ASSERT_GT(negatives, 0) << what;
              }
            }
          }
        }
      }
    }
  }
}

// Small products skip packing (cpu_gemm_small.h) and must give bitwise what
// the packed path gives: every transpose, accumulation, bias and Relu,
// padded strides, C from one lane to four vectors wide, a NaN in A.
TEST(CpuGemmTest, SmallProductsAreBitwiseThePackedPath) {
  std::mt19937 rng(77);
  std::uniform_int_distribution<int64_t> m_dist(1, 20), n_dist(1, 70), k_dist(1, 60), pad(0, 3);
  int compared = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Problem p{m_dist(rng), n_dist(rng), k_dist(rng), (trial & 1) != 0, (trial & 2) != 0, pad(rng), pad(rng), pad(rng)};
    if (trial % 50 == 0) p = {2, 3, 256, (trial & 1) != 0, false};  // the deepest k the small path takes
    if (p.m * p.n * p.k > 16384 || p.n > 4 * simd::kLanes) continue;
    Operands o = MakeOperands(p, 1000 + trial);
    if (trial % 7 == 0) o.a[0] = std::nanf("");
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> bias(p.n), initial(p.m * o.ldc);
    for (float& x : bias) x = u(rng);
    for (float& x : initial) x = u(rng);
    const bool accumulate = (trial & 4) != 0, relu = (trial & 8) != 0, with_bias = (trial & 16) != 0;
    std::vector<float> results[2];
    for (int packed = 0; packed < 2; ++packed) {
      results[packed] = initial;
      GemmArgs g = ArgsFor(p, o, &results[packed], accumulate);
      g.bias = with_bias ? bias.data() : nullptr;
      g.relu = relu;
      g.small_path = packed == 0;
      if (packed == 0) {
        // Small enough for the small path, which must take it.
        ASSERT_TRUE(cpu_gemm_internal::SmallGemm(g)) << Describe(p);
      } else {
        CpuGemm(g, nullptr, 1);
      }
    }
    ASSERT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(float)), 0)
        << Describe(p) << " accumulate=" << accumulate << " relu=" << relu << " bias=" << with_bias;
    ++compared;
  }
  EXPECT_GT(compared, 100);
}

TEST(CpuGemmTest, CallsFromInsideThePoolFinish) {
  Eigen::ThreadPool pool(2);
  Problem p{256, 256, 256, false, false};
  const Operands o = MakeOperands(p, 11);
  std::vector<float> expected(p.m * o.ldc);
  RunGemm(p, o, &expected, false, nullptr, 1);
  std::vector<std::vector<float>> results(4, std::vector<float>(p.m * o.ldc));
  absl::BlockingCounter done(4);
  for (int i = 0; i < 4; ++i) {
    pool.Schedule([&, i] {
      RunGemm(p, o, &results[i], false, &pool, 2);
      done.DecrementCount();
    });
  }
  done.Wait();
  for (const auto& r : results) ASSERT_EQ(r, expected);
}

}  // namespace
}  // namespace sluice
