// SessionOptions::ops_on_intra_op_pool: the executor's nodes run on the CPU
// device's intra-op pool, and kernels split their loops over that same pool
// from its own threads (CpuGemm, ParallelForRanges, Im2Col) or evaluate Eigen
// contractions on their thread. Steps from several callers at once finish
// and compute exactly what a session with its own inter-op pool computes.
#include <cstring>
#include <thread>
#include <vector>

#include "engine/framework/op_def.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "engine/runtime/session_test_util.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

Tensor RandomDoubles(const TensorShape& shape, uint32_t seed) {
  Tensor f = RandomFloats(shape, seed);
  Tensor d(DT_DOUBLE, shape);
  for (int64_t i = 0; i < f.NumElements(); ++i) d.data<double>()[i] = f.data<float>()[i];
  return d;
}

// Products large enough to split across threads, a double product (Eigen's
// contraction), an elementwise op over more than a million elements, and a
// convolution (im2col + GEMM), two of them in parallel branches.
GraphDef TestGraph(std::vector<std::string>* fetches) {
  GraphDefBuilder b;
  const std::string a = b.Const("a", RandomFloats(TensorShape({256, 256}), 1));
  const std::string w = b.Const("w", RandomFloats(TensorShape({256, 256}), 2));
  const std::string ab = b.Node("ab", "MatMul", {a, w}, {{"T", MakeAttr(DT_FLOAT)}});
  const std::string ba = b.Node("ba", "MatMul", {w, a}, {{"T", MakeAttr(DT_FLOAT)}, {"transpose_a", MakeAttr(true)}});
  const std::string abba = b.Node("abba", "MatMul", {ab, ba}, {{"T", MakeAttr(DT_FLOAT)}});
  const std::string da = b.Const("da", RandomDoubles(TensorShape({96, 80}), 3));
  const std::string dw = b.Const("dw", RandomDoubles(TensorShape({80, 72}), 4));
  const std::string dprod = b.Node("dprod", "MatMul", {da, dw}, {{"T", MakeAttr(DT_DOUBLE)}});
  const std::string big = b.Const("big", RandomFloats(TensorShape({1100, 1024}), 5));
  const std::string relu = b.Node("relu", "Relu", {big}, {{"T", MakeAttr(DT_FLOAT)}});
  const std::string img = b.Const("img", RandomFloats(TensorShape({8, 20, 20, 3}), 6));
  const std::string filt = b.Const("filt", RandomFloats(TensorShape({3, 3, 3, 16}), 7));
  const std::string conv = b.Node("conv", "Conv2D", {img, filt},
                                  {{"T", MakeAttr(DT_FLOAT)},
                                   {"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})},
                                   {"padding", MakeAttr(std::string("SAME"))}});
  *fetches = {abba, dprod, relu, conv};
  return b.graph();
}

std::vector<Tensor> RunOnce(Session* session, const std::vector<std::string>& fetches) {
  std::vector<Tensor> out;
  absl::Status s = session->Run({}, fetches, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

void ExpectSame(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << i;
    ASSERT_EQ(got[i].TotalBytes(), want[i].TotalBytes()) << i;
    EXPECT_EQ(std::memcmp(got[i].raw_data(), want[i].raw_data(), got[i].TotalBytes()), 0) << "fetch " << i;
  }
}

TEST(SharedPoolSession, ConcurrentStepsMatchASessionWithItsOwnPool) {
  std::vector<std::string> fetches;
  const GraphDef graph = TestGraph(&fetches);

  SessionOptions own;
  own.inter_op_threads = 2;
  auto reference_session = NewSession(own);
  ASSERT_TRUE(reference_session.ok());
  ASSERT_TRUE((*reference_session)->Create(graph).ok());
  const std::vector<Tensor> want = RunOnce(reference_session->get(), fetches);
  ASSERT_EQ(want.size(), fetches.size());

  SessionOptions shared;
  shared.ops_on_intra_op_pool = true;
  for (int round = 0; round < 3; ++round) {  // sessions come and go on the shared pool
    auto session = NewSession(shared);
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->Create(graph).ok());
    std::vector<std::thread> callers;
    std::vector<std::vector<Tensor>> last(3);
    for (int c = 0; c < 3; ++c) {
      callers.emplace_back([&, c] {
        for (int step = 0; step < 8; ++step) last[c] = RunOnce(session->get(), fetches);
      });
    }
    for (auto& t : callers) t.join();
    for (int c = 0; c < 3; ++c) ExpectSame(last[c], want);
  }
}

}  // namespace
}  // namespace sluice
