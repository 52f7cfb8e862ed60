// FusedBatchNormV3 and its gradient give bitwise the same outputs on one
// intra-op thread and on two (batch_norm_ops.cc: blocks that depend only on
// the shape, merged in order), for tensors large enough to run on the pool.
#include <cstring>
#include <string>
#include <vector>

#include "engine/kernels/bench_kernel_runner.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

std::vector<Tensor> RunKernel(int threads, const std::string& op, const std::map<std::string, AttrValue>& attrs,
                        const std::vector<Tensor>& inputs) {
  KernelRunner r(threads, op, attrs, inputs);
  EXPECT_TRUE(r.status().ok()) << r.status();
  std::vector<Tensor> out;
  absl::Status s = r.status().ok() ? r.Run(&out) : r.status();
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.TotalBytes() == b.TotalBytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

TEST(BatchNormThreads, OneAndTwoThreadsGiveTheSameBits) {
  for (bool nchw : {false, true}) {
    const TensorShape shape = nchw ? TensorShape({6, 24, 40, 40}) : TensorShape({6, 40, 40, 24});  // 230K elements
    const std::map<std::string, AttrValue> attrs = {{"T", MakeAttr(DT_FLOAT)},
                                                    {"U", MakeAttr(DT_FLOAT)},
                                                    {"epsilon", MakeAttr(0.001f)},
                                                    {"is_training", MakeAttr(true)},
                                                    {"data_format", MakeAttr(std::string(nchw ? "NCHW" : "NHWC"))}};
    const Tensor x = BenchRandom(shape, 3, 5), dy = BenchRandom(shape, -1, 1);
    const Tensor scale = BenchRandom(TensorShape({24}), 0.5, 2), offset = BenchRandom(TensorShape({24}));
    const Tensor empty(DT_FLOAT, TensorShape({0}));
    std::vector<Tensor> forward[2], backward[2];
    for (int threads : {1, 2}) {
      forward[threads - 1] = RunKernel(threads, "FusedBatchNormV3", attrs, {x, scale, offset, empty, empty});
      ASSERT_EQ(forward[threads - 1].size(), 6u);
      backward[threads - 1] = RunKernel(threads, "FusedBatchNormGradV3", attrs,
                                  {dy, x, scale, forward[threads - 1][3], forward[threads - 1][4], empty});
      ASSERT_EQ(backward[threads - 1].size(), 5u);
    }
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(SameBits(forward[0][i], forward[1][i])) << "nchw " << nchw << " output " << i;
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(SameBits(backward[0][i], backward[1][i])) << "nchw " << nchw << " grad output " << i;
  }
}

}  // namespace
}  // namespace sluice
