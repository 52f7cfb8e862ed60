// The float MatMul and _FusedMatMul kernels (matmul_op.cc) on narrow products,
// which they compute as the transposed product and transpose back, against
// CpuGemm called directly on the product as asked (bias and Relu in its
// epilogue), bit for bit: both sum each element over k in the same order, so
// any difference is a bug in the transposed path (a swapped operand, a wrong
// stride, the bias or Relu applied differently). Every shape here takes the
// transposed path with the micro-kernel's tile of the build (the test checks
// that); 1 and 2 threads, all four transpose combinations, k over several
// blocks, n == 1. Built twice: matmul_exact_test natively (8 x 32 AVX-512 tiles
// on a machine that has them) and matmul_avx2_test with -mno-avx512f (6 x 16).
#include <string>
#include <vector>

#include "engine/kernels/bench_kernel_runner.h"
#include "engine/kernels/cpu_gemm.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

struct Product {
  int64_t m, k, n;
};

// The rule matmul_op.cc applies (TransposedProductIsBetter), restated so that a
// case which stops taking the transposed path fails here instead of passing
// on the plain path.
bool TakesTransposedPath(const Product& p) {
  return p.k >= 16 && CpuGemmTileUse(p.n, p.m) >= 1.5 * CpuGemmTileUse(p.m, p.n);
}

const std::vector<Product>& Products() {
  static const std::vector<Product> products = {
      {130, 70, 4}, {130, 70, 1}, {96, 40, 4}, {130, 300, 4}, {1000, 33, 3}};
  return products;
}

// C = act(op(A) op(B) + bias) by CpuGemm on the product as asked.
Tensor Direct(const Tensor& a, const Tensor& b, const Product& p, bool ta, bool tb, const float* bias, bool relu,
              int threads) {
  Tensor c(DT_FLOAT, TensorShape({p.m, p.n}));
  GemmArgs g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.a = a.data<float>();
  g.lda = a.dim_size(1);
  g.transpose_a = ta;
  g.b = b.data<float>();
  g.ldb = b.dim_size(1);
  g.transpose_b = tb;
  g.c = c.data<float>();
  g.ldc = p.n;
  g.bias = bias;
  g.relu = relu;
  const Device* device = BenchCpuDevice(threads);
  CpuGemm(g, *device->eigen_cpu_device());
  return c;
}

void ExpectBitwiseEqual(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  int64_t zeros = 0;
  for (int64_t i = 0; i < got.NumElements(); ++i) {
    ASSERT_EQ(g[i], w[i]) << what << " at " << i / want.dim_size(1) << "," << i % want.dim_size(1);
    zeros += w[i] == 0.0f;
  }
  EXPECT_LT(zeros, want.NumElements()) << what;  // not all clipped
}

TEST(MatMulExact, EveryCaseTakesTheTransposedPath) {
  for (const Product& p : Products()) {
    EXPECT_TRUE(TakesTransposedPath(p)) << p.m << "x" << p.k << "x" << p.n << " with " << kCpuGemmTileRows << "x"
                                        << kCpuGemmTileCols << " tiles";
  }
}

TEST(MatMulExact, NarrowProductsEqualTheDirectProduct) {
  for (const Product& p : Products()) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const Tensor a = BenchRandom(ta ? TensorShape({p.k, p.m}) : TensorShape({p.m, p.k}));
      const Tensor b = BenchRandom(tb ? TensorShape({p.n, p.k}) : TensorShape({p.k, p.n}), -2, 1);
      const Tensor bias = BenchRandom(TensorShape({p.n}), -0.5, 0.5);
      for (int threads : {1, 2}) {
        const std::string what = std::to_string(p.m) + "x" + std::to_string(p.k) + "x" + std::to_string(p.n) +
                                 (ta ? " ta" : "") + (tb ? " tb" : "") + " threads " + std::to_string(threads);
        const std::map<std::string, AttrValue> attrs = {
            {"T", MakeAttr(DT_FLOAT)}, {"transpose_a", MakeAttr(ta)}, {"transpose_b", MakeAttr(tb)}};
        KernelRunner matmul(threads, "MatMul", attrs, {a, b});
        ASSERT_TRUE(matmul.status().ok()) << matmul.status();
        std::vector<Tensor> out;
        ASSERT_TRUE(matmul.Run(&out).ok());
        ExpectBitwiseEqual(out[0], Direct(a, b, p, ta, tb, nullptr, false, threads), "MatMul " + what);
        for (bool relu : {false, true}) {
          std::map<std::string, AttrValue> fused_attrs = attrs;
          fused_attrs["num_args"] = MakeAttr(int64_t{1});  // the bias
          fused_attrs["fused_ops"] =
              MakeAttr(relu ? std::vector<std::string>{"BiasAdd", "Relu"} : std::vector<std::string>{"BiasAdd"});
          KernelRunner fused(threads, "_FusedMatMul", fused_attrs, {a, b, bias});
          ASSERT_TRUE(fused.status().ok()) << fused.status();
          ASSERT_TRUE(fused.Run(&out).ok());
          ExpectBitwiseEqual(out[0], Direct(a, b, p, ta, tb, bias.data<float>(), relu, threads),
                             std::string(relu ? "_FusedMatMul BiasAdd,Relu " : "_FusedMatMul BiasAdd ") + what);
        }
      }
    }
  }
}

}  // namespace
}  // namespace sluice
