// The data format pass through a session: a small CNN written in NCHW (as
// TensorFlow graphs for GPUs are) trains on the CPU, whose kernels take NHWC
// only. Its loss and every gradient equal those of the same model written in
// NHWC, and the step runs its convolution chain between a handful of
// Transposes, not two around every node. Convolutions inside a while loop and
// a cond, and a fetched intermediate, give the NHWC twin's values too.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/control_flow_builders.h"
#include "engine/graph/gradients.h"
#include "engine/graph/graph.h"
#include "engine/graph/graph_builder.h"
#include "engine/runtime/session.h"
#include "engine/runtime/session_test_util.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

constexpr int64_t kBatch = 3, kHeight = 8, kWidth = 6, kChannels = 2;

// [N, H, W, C] -> [N, C, H, W].
Tensor ToNchw(const Tensor& t) {
  const int64_t n = t.dim_size(0), h = t.dim_size(1), w = t.dim_size(2), c = t.dim_size(3);
  Tensor out(DT_FLOAT, TensorShape({n, c, h, w}));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch) {
          out.data<float>()[((b * c + ch) * h + y) * w + x] = t.data<float>()[((b * h + y) * w + x) * c + ch];
        }
  return out;
}

struct Model {
  GraphDef def;
  std::vector<std::string> fetches;  // loss, then d loss / d (x, f1, b1, f2, b2)
};

// How the model's NCHW variant meets its data.
enum class Io {
  kInFormat,       // x and w come in the model's format
  kNhwcTransposed, // x and w come in NHWC; the model transposes x into NCHW
                   // and relu2 back to NHWC, as a graph written for a GPU
                   // that reads NHWC images does
};

// x -> conv1 (3x3, 2 -> 4, SAME) + b1 -> relu -> 2x2 max pool -> conv2 (3x3,
// 4 -> 5, stride 2 along rows, VALID) + b2 -> relu -> loss = sum(relu2 * w),
// in `format`; the weights w come in that format too, unless `io` says
// otherwise.
Model Build(const std::string& format, Io io = Io::kInFormat) {
  const bool nchw = format == "NCHW";
  const bool transposed = nchw && io == Io::kNhwcTransposed;
  auto in_format = [&](std::vector<int64_t> nhwc) {
    return nchw ? std::vector<int64_t>{nhwc[0], nhwc[3], nhwc[1], nhwc[2]} : nhwc;
  };
  Graph graph;
  GraphBuilder b(&graph);
  const AttrValue format_attr = MakeAttr(format);
  Output x = b.Op("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
  Output w = b.Op("w", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
  Output images = x;
  if (transposed) {
    images = b.Op("to_nchw", "Transpose", {x, b.Const("to_nchw_perm", Tensor::FromVector<int32_t>({0, 3, 1, 2}))});
  }
  Output f1 = b.Const("f1", RandomFloats(TensorShape({3, 3, kChannels, 4}), 1));
  Output b1 = b.Const("b1", RandomFloats(TensorShape({4}), 2));
  Output f2 = b.Const("f2", RandomFloats(TensorShape({3, 3, 4, 5}), 3));
  Output b2 = b.Const("b2", RandomFloats(TensorShape({5}), 4));
  AttrList conv1 = {{"strides", MakeAttr(in_format({1, 1, 1, 1}))}, {"padding", MakeAttr("SAME")},
                    {"data_format", format_attr}};
  AttrList conv2 = {{"strides", MakeAttr(in_format({1, 2, 1, 1}))}, {"padding", MakeAttr("VALID")},
                    {"data_format", format_attr}};
  AttrList pool = {{"ksize", MakeAttr(in_format({1, 2, 2, 1}))}, {"strides", MakeAttr(in_format({1, 2, 2, 1}))},
                   {"padding", MakeAttr("VALID")}, {"data_format", format_attr}};
  AttrList bias = {{"data_format", format_attr}};
  Output h =
      b.Op("relu1", "Relu", {b.Op("bias1", "BiasAdd", {b.Op("conv1", "Conv2D", {images, f1}, conv1), b1}, bias)});
  h = b.Op("pool", "MaxPool", {h}, pool);
  h = b.Op("relu2", "Relu", {b.Op("bias2", "BiasAdd", {b.Op("conv2", "Conv2D", {h, f2}, conv2), b2}, bias)});
  if (transposed) {
    h = b.Op("to_nhwc", "Transpose", {h, b.Const("to_nhwc_perm", Tensor::FromVector<int32_t>({0, 2, 3, 1}))});
  }
  Output axes = b.Const("axes", Tensor::FromVector<int32_t>({0, 1, 2, 3}));
  Output loss = b.Op("loss", "Sum", {b.Op("weighted", "Mul", {h, w}), axes});
  EXPECT_TRUE(b.ok()) << b.status();
  std::vector<Gradient> grads;
  absl::Status s = AddSymbolicGradients(&graph, {loss}, {x, f1, b1, f2, b2}, {}, &grads);
  EXPECT_TRUE(s.ok()) << s;
  Model m;
  graph.ToGraphDef(&m.def);
  m.fetches.push_back("loss:0");
  for (const Gradient& g : grads) m.fetches.push_back(g.dense.name());
  return m;
}

struct Result {
  std::vector<Tensor> outputs;
  int transposes = 0;
  std::map<std::string, int> fused;  // fused op type -> nodes of it that ran
};

Result RunStep(const std::string& format, const Tensor& x_nhwc, const Tensor& w_nhwc, Io io = Io::kInFormat) {
  Result r;
  SessionOptions options;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return r;
  Model m = Build(format, io);
  absl::Status s = (*session)->Create(m.def);
  EXPECT_TRUE(s.ok()) << s;
  const bool nchw = format == "NCHW" && io == Io::kInFormat;
  RunOptions run;
  run.collect_step_stats = true;
  RunMetadata metadata;
  s = (*session)->Run(run, {{"x", nchw ? ToNchw(x_nhwc) : x_nhwc}, {"w", nchw ? ToNchw(w_nhwc) : w_nhwc}},
                      m.fetches, {}, &r.outputs, &metadata);
  EXPECT_TRUE(s.ok()) << s;
  for (const NodeExecStats& n : metadata.step_stats) {
    r.transposes += n.op == "Transpose";
    if (n.op.rfind("_Fused", 0) == 0) ++r.fused[n.op];
  }
  return r;
}

void ExpectClose(const Tensor& expected, const Tensor& actual, const std::string& what) {
  ASSERT_EQ(expected.shape(), actual.shape()) << what;
  const FloatDifference d = CompareFloats(expected, actual);
  EXPECT_LE(d.worst, 1e-5 * std::max(1.0, d.scale)) << what << ": worst difference " << d.worst;
}

TEST(LayoutSession, AnNchwCnnTrainsOnTheCpuAsItsNhwcTwinDoes) {
  const Tensor x = RandomFloats(TensorShape({kBatch, kHeight, kWidth, kChannels}), 11);
  // conv1 [3, 8, 6, 4] -> pool [3, 4, 3, 4] -> conv2 [3, 1, 1, 5]: w has
  // relu2's shape.
  const Tensor w = RandomFloats(TensorShape({kBatch, 1, 1, 5}), 12);
  const Result nhwc = RunStep("NHWC", x, w);
  const Result nchw = RunStep("NCHW", x, w);
  ASSERT_EQ(nhwc.outputs.size(), 6u);
  ASSERT_EQ(nchw.outputs.size(), 6u);
  ExpectClose(nhwc.outputs[0], nchw.outputs[0], "loss");
  ExpectClose(ToNchw(nhwc.outputs[1]), nchw.outputs[1], "d loss / d x");
  const char* const names[] = {"f1", "b1", "f2", "b2"};
  for (int i = 2; i < 6; ++i) ExpectClose(nhwc.outputs[i], nchw.outputs[i], std::string("d loss / d ") + names[i - 2]);
  EXPECT_EQ(nhwc.transposes, 0);
  // x into the chain (for conv1 and its filter gradient), relu2 out of it (to
  // the loss's Mul and to relu2's gradient, which stay NCHW: the Mul's other
  // input is w), that gradient back in (for conv2's two backprops) and dx out.
  // Everything between runs NHWC, Shape(pool) for conv2's input gradient
  // included.
  EXPECT_EQ(nchw.transposes, 4);
  // The fusion passes, which run after the layout pass, fuse the converted
  // chains as they fuse the NHWC model's (conv + bias + relu, and the pool's
  // gradient with relu's and the bias's).
  EXPECT_EQ(nchw.fused, nhwc.fused);
  EXPECT_GT(nhwc.fused.count("_FusedConv2D"), 0u);
}

TEST(LayoutSession, AUsersTransposesIntoNchwAndBackCancelWithThePasssInTheTrainingStep) {
  // x into NCHW, relu2 back to NHWC: the pass's Transposes cancel with both,
  // and with their gradients (Transposes by the inverse permutation, which
  // constant folding turns into Consts before the pass), so the step runs no
  // Transpose at all and gives the NHWC twin's loss and gradients.
  const Tensor x = RandomFloats(TensorShape({kBatch, kHeight, kWidth, kChannels}), 13);
  const Tensor w = RandomFloats(TensorShape({kBatch, 1, 1, 5}), 14);
  const Result nhwc = RunStep("NHWC", x, w);
  const Result transposed = RunStep("NCHW", x, w, Io::kNhwcTransposed);
  ASSERT_EQ(transposed.outputs.size(), 6u);
  const char* const names[] = {"loss",          "d loss / d x",  "d loss / d f1",
                               "d loss / d b1", "d loss / d f2", "d loss / d b2"};
  for (int i = 0; i < 6; ++i) ExpectClose(nhwc.outputs[i], transposed.outputs[i], names[i]);
  EXPECT_EQ(transposed.transposes, 0);
  EXPECT_EQ(transposed.fused, nhwc.fused);
}

// x -> c0 = conv(x) (fetched) -> pool0; a while loop h <- relu(conv(h, f))
// three times from x (f captured through a constant Enter, h through
// Identity(Switch)); pred ? maxpool(conv(x)) : avgpool(x) (x reaching each
// branch through a Switch). All in `format`.
GraphDef ControlFlowModel(const std::string& format) {
  const bool nchw = format == "NCHW";
  auto in_format = [&](std::vector<int64_t> nhwc) {
    return nchw ? std::vector<int64_t>{nhwc[0], nhwc[3], nhwc[1], nhwc[2]} : nhwc;
  };
  Graph graph;
  GraphBuilder b(&graph);
  Output x = b.Op("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
  Output pred = b.Op("pred", "Placeholder", {}, {{"dtype", MakeAttr(DT_BOOL)}});
  Output f = b.Const("f", RandomFloats(TensorShape({3, 3, kChannels, kChannels}), 21));
  const AttrList conv = {{"strides", MakeAttr(in_format({1, 1, 1, 1}))}, {"padding", MakeAttr("SAME")},
                         {"data_format", MakeAttr(format)}};
  const AttrList pool = {{"ksize", MakeAttr(in_format({1, 2, 2, 1}))}, {"strides", MakeAttr(in_format({1, 2, 2, 1}))},
                         {"padding", MakeAttr("VALID")}, {"data_format", MakeAttr(format)}};
  Output c0 = b.Op("c0", "Conv2D", {x, f}, conv);
  b.Op("pool0", "MaxPool", {c0}, pool);
  Output zero = b.Scalar<int32_t>("zero", 0);
  auto loop = BuildWhileLoop(
      &b, {x, zero},
      [](GraphBuilder& lb, const std::vector<Output>& v) {
        return lb.Op("less", "Less", {v[1], lb.Scalar<int32_t>("three", 3)});
      },
      [&](GraphBuilder& lb, const std::vector<Output>& v) {
        WhileBody body;
        body.next = {lb.Op("relu", "Relu", {lb.Op("conv", "Conv2D", {v[0], f}, conv)}),
                     lb.Op("inc", "AddV2", {v[1], lb.Scalar<int32_t>("one", 1)})};
        return body;
      });
  EXPECT_TRUE(loop.ok()) << loop.status();
  if (loop.ok()) b.Op("looped", "Identity", {loop->outputs[0]});
  auto cond = BuildCond(
      &b, pred,
      [&](GraphBuilder& cb) {
        return std::vector<Output>{cb.Op("max", "MaxPool", {cb.Op("conv", "Conv2D", {x, f}, conv)}, pool)};
      },
      [&](GraphBuilder& cb) { return std::vector<Output>{cb.Op("avg", "AvgPool", {x}, pool)}; });
  EXPECT_TRUE(cond.ok()) << cond.status();
  if (cond.ok()) b.Op("chosen", "Identity", {(*cond)[0]});
  EXPECT_TRUE(b.ok()) << b.status();
  GraphDef def;
  graph.ToGraphDef(&def);
  return def;
}

TEST(LayoutSession, ConvolutionsInLoopsAndCondsAndAFetchedIntermediateMatchTheNhwcTwin) {
  const Tensor x = RandomFloats(TensorShape({kBatch, kHeight, kWidth, kChannels}), 31);
  const std::vector<std::string> fetches = {"c0", "pool0", "looped", "chosen"};
  for (bool taken : {true, false}) {
    std::map<std::string, std::vector<Tensor>> outputs;
    for (const std::string format : {"NHWC", "NCHW"}) {
      auto session = NewSession(SessionOptions());
      ASSERT_TRUE(session.ok()) << session.status();
      absl::Status s = (*session)->Create(ControlFlowModel(format));
      ASSERT_TRUE(s.ok()) << s;
      s = (*session)->Run({{"x", format == "NCHW" ? ToNchw(x) : x}, {"pred", Tensor::Scalar<bool>(taken)}}, fetches,
                          {}, &outputs[format]);
      ASSERT_TRUE(s.ok()) << format << ": " << s;
      ASSERT_EQ(outputs[format].size(), fetches.size());
    }
    for (size_t i = 0; i < fetches.size(); ++i) {
      // The NCHW graph's values are NCHW: c0, fetched by name, included.
      const std::string what = fetches[i] + (taken ? " (pred true)" : " (pred false)");
      ExpectClose(ToNchw(outputs["NHWC"][i]), outputs["NCHW"][i], what);
    }
  }
}

}  // namespace
}  // namespace sluice
