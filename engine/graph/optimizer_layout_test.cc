// Spec for the data format pass: NCHW convolution and pooling nodes on a CPU
// become NHWC with their window attrs rearranged, the nodes between them
// that lead to another such node follow, and a chain keeps one Transpose
// where it starts and one where it ends; shape inputs get a
// DataFormatVecPermute; a node's control inputs order its Transposes; an NHWC
// graph is untouched; a device that asks for NCHW gets the reverse; nodes on
// a device without a Transpose kernel stay. (Values: the NCHW cases of
// engine/kernels/harness/nn_cases.cc run through the pass, gradients
// included; loops, conds and fetches: engine/runtime/layout_session_test.cc.)
#include "engine/graph/optimizer_layout.h"

#include <memory>
#include <string>
#include <vector>

#include "engine/graph/fusion_test_util.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;

using fusion_test::CountOps;
using fusion_test::DefOf;
using fusion_test::InputsOf;
using fusion_test::kCpu;
using fusion_test::kGpu;
using fusion_test::kXpu;
using fusion_test::MustBuild;

// XPU stands for a device whose kernels want NCHW: it can transpose and
// permute shape vectors, and runs the layout ops (nothing runs them here).
REGISTER_KERNEL_BUILDER(Name("Transpose").Device(fusion_test::kXpuType), fusion_test::StandInKernel);
REGISTER_KERNEL_BUILDER(Name("DataFormatVecPermute").Device(fusion_test::kXpuType), fusion_test::StandInKernel);

AttrValue Ints(std::vector<int64_t> v) { return MakeAttr(v); }

std::vector<int64_t> IntsOf(const Graph& g, const std::string& node, const char* attr) {
  std::vector<int64_t> v;
  EXPECT_TRUE(GetNodeAttr(DefOf(g, node), attr, &v).ok()) << node << "." << attr;
  return v;
}

std::string FormatOf(const Graph& g, const std::string& node) {
  std::string f;
  EXPECT_TRUE(GetNodeAttr(DefOf(g, node), "data_format", &f).ok()) << node;
  return f;
}

// The permutation a Transpose node of the pass applies (its Const input).
std::vector<int32_t> PermOf(const Graph& g, const std::string& transpose) {
  const Node* t = g.FindNode(transpose);
  EXPECT_NE(t, nullptr) << transpose;
  if (t == nullptr) return {};
  EXPECT_EQ(t->type_string(), "Transpose");
  const Node* perm = t->input_edge(1)->src;
  TensorProto proto;
  EXPECT_TRUE(GetNodeAttr(perm->def(), "value", &proto).ok());
  auto value = Tensor::FromProto(proto);
  EXPECT_TRUE(value.ok());
  if (!value.ok()) return {};
  std::vector<int32_t> out(value->data<int32_t>(), value->data<int32_t>() + value->NumElements());
  return out;
}

// The node feeding `node`'s input `i`.
std::string SourceOf(const Graph& g, const std::string& node, int i) {
  std::string input = InputsOf(g, node).at(i);
  return input.substr(0, input.find(':'));
}

void ExpectReimports(const Graph& g) {
  GraphDef def;
  g.ToGraphDef(&def);
  auto again = GraphFromGraphDef(def);
  EXPECT_TRUE(again.ok()) << again.status();
}

// x [N, C, H, W] -> conv (stride 2 along rows) -> + b -> relu -> 2x2 max pool
// -> conv2 -> out, all NCHW: a TensorFlow graph written for a GPU.
GraphDefBuilder NchwChain(const std::string& format = "NCHW") {
  const bool nchw = format == "NCHW";
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.Placeholder("f2", DT_FLOAT);
  b.Placeholder("b", DT_FLOAT);
  auto conv = [&](const std::string& name, const std::string& in, const std::string& filter,
                  std::vector<int64_t> strides) {
    b.Node(name, "Conv2D", {in, filter},
           {{"T", MakeAttr(DT_FLOAT)}, {"strides", Ints(strides)}, {"padding", MakeAttr("SAME")},
            {"data_format", MakeAttr(format)}});
  };
  conv("conv", "x", "f", nchw ? std::vector<int64_t>{1, 1, 2, 1} : std::vector<int64_t>{1, 2, 1, 1});
  b.Node("bias", "BiasAdd", {"conv", "b"}, {{"T", MakeAttr(DT_FLOAT)}, {"data_format", MakeAttr(format)}});
  b.Node("relu", "Relu", {"bias"}, {{"T", MakeAttr(DT_FLOAT)}});
  const std::vector<int64_t> window = nchw ? std::vector<int64_t>{1, 1, 2, 2} : std::vector<int64_t>{1, 2, 2, 1};
  b.Node("pool", "MaxPool", {"relu"},
         {{"T", MakeAttr(DT_FLOAT)}, {"ksize", Ints(window)}, {"strides", Ints(window)}, {"padding", MakeAttr("VALID")},
          {"data_format", MakeAttr(format)}});
  conv("conv2", "pool", "f2", {1, 1, 1, 1});
  b.Identity("out", "conv2", DT_FLOAT);
  return b;
}

TEST(Layout, AnNchwChainOnACpuRunsNhwcBetweenOneTransposeInAndOneOut) {
  auto g = MustBuild(NchwChain().graph());
  ASSERT_NE(g, nullptr);
  const LayoutResult r = ConvertDataFormats(LayoutOptions(), g.get());
  EXPECT_EQ(r.converted_nodes, 5);  // conv, bias, relu, pool, conv2
  EXPECT_EQ(r.transposes, 2);
  EXPECT_EQ(CountOps(*g, "Transpose"), 2);
  for (const char* n : {"conv", "bias", "pool", "conv2"}) EXPECT_EQ(FormatOf(*g, n), "NHWC") << n;
  EXPECT_THAT(IntsOf(*g, "conv", "strides"), ElementsAre(1, 2, 1, 1));
  EXPECT_THAT(IntsOf(*g, "pool", "ksize"), ElementsAre(1, 2, 2, 1));
  EXPECT_THAT(IntsOf(*g, "pool", "strides"), ElementsAre(1, 2, 2, 1));
  // x enters through one Transpose to NHWC; conv2's result leaves through one
  // back to NCHW; everything between reads its producer directly.
  const std::string in = SourceOf(*g, "conv", 0);
  EXPECT_THAT(PermOf(*g, in), ElementsAre(0, 2, 3, 1));
  EXPECT_EQ(SourceOf(*g, in, 0), "x");
  EXPECT_EQ(SourceOf(*g, "bias", 0), "conv");
  EXPECT_EQ(SourceOf(*g, "relu", 0), "bias");
  EXPECT_EQ(SourceOf(*g, "pool", 0), "relu");
  EXPECT_EQ(SourceOf(*g, "conv2", 0), "pool");
  const std::string out = SourceOf(*g, "out", 0);
  EXPECT_THAT(PermOf(*g, out), ElementsAre(0, 3, 1, 2));
  EXPECT_EQ(SourceOf(*g, out, 0), "conv2");
  EXPECT_EQ(g->FindNode(in)->assigned_device(), kCpu);
  ExpectReimports(*g);
}

TEST(Layout, AnNhwcGraphOnACpuIsUntouched) {
  auto g = MustBuild(NchwChain("NHWC").graph());
  ASSERT_NE(g, nullptr);
  const int before = g->num_nodes();
  const LayoutResult r = ConvertDataFormats(LayoutOptions(), g.get());
  EXPECT_EQ(r.converted_nodes, 0);
  EXPECT_EQ(r.transposes, 0);
  EXPECT_EQ(g->num_nodes(), before);
}

TEST(Layout, ADeviceThatAsksForNchwGetsTheChainInNchw) {
  auto g = MustBuild(NchwChain("NHWC").graph(), kXpu);
  ASSERT_NE(g, nullptr);
  LayoutOptions options;
  options.format_by_device_type["XPU"] = "NCHW";
  const LayoutResult r = ConvertDataFormats(options, g.get());
  EXPECT_EQ(r.converted_nodes, 5);
  EXPECT_EQ(CountOps(*g, "Transpose"), 2);
  for (const char* n : {"conv", "bias", "pool", "conv2"}) EXPECT_EQ(FormatOf(*g, n), "NCHW") << n;
  EXPECT_THAT(IntsOf(*g, "conv", "strides"), ElementsAre(1, 1, 2, 1));
  EXPECT_THAT(IntsOf(*g, "pool", "ksize"), ElementsAre(1, 1, 2, 2));
  EXPECT_THAT(PermOf(*g, SourceOf(*g, "conv", 0)), ElementsAre(0, 3, 1, 2));
  EXPECT_THAT(PermOf(*g, SourceOf(*g, "out", 0)), ElementsAre(0, 2, 3, 1));
  EXPECT_EQ(g->FindNode(SourceOf(*g, "conv", 0))->assigned_device(), kXpu);
  ExpectReimports(*g);
}

TEST(Layout, NodesOnADeviceThatCannotTransposeStay) {
  // No GPU kernels are linked into this test: the GPU has no Transpose.
  auto g = MustBuild(NchwChain().graph(), kGpu);
  ASSERT_NE(g, nullptr);
  const int before = g->num_nodes();
  EXPECT_EQ(ConvertDataFormats(LayoutOptions(), g.get()).converted_nodes, 0);
  EXPECT_EQ(g->num_nodes(), before);
  EXPECT_EQ(FormatOf(*g, "conv"), "NCHW");
}

TEST(Layout, ShapeInputsArePermutedAndEveryDataInputTransposed) {
  // The backward pass of an NCHW conv + pool, as TensorFlow writes it.
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("pooled", DT_FLOAT);
  b.Placeholder("dy", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.Const("sizes", Tensor::FromVector<int32_t>({2, 3, 8, 8}));
  const std::vector<int64_t> window = {1, 1, 2, 2};
  b.Node("pool_grad", "MaxPoolGrad", {"x", "pooled", "dy"},
         {{"T", MakeAttr(DT_FLOAT)}, {"ksize", Ints(window)}, {"strides", Ints(window)}, {"padding", MakeAttr("VALID")},
          {"data_format", MakeAttr("NCHW")}});
  b.Node("input_grad", "Conv2DBackpropInput", {"sizes", "f", "pool_grad"},
         {{"T", MakeAttr(DT_FLOAT)}, {"strides", Ints({1, 1, 1, 1})}, {"padding", MakeAttr("SAME")},
          {"data_format", MakeAttr("NCHW")}});
  b.Node("filter_grad", "Conv2DBackpropFilter", {"x", "sizes", "pool_grad"},
         {{"T", MakeAttr(DT_FLOAT)}, {"strides", Ints({1, 1, 1, 1})}, {"padding", MakeAttr("SAME")},
          {"data_format", MakeAttr("NCHW")}});
  b.Identity("dx", "input_grad", DT_FLOAT);
  b.Identity("df", "filter_grad", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  const LayoutResult r = ConvertDataFormats(LayoutOptions(), g.get());
  EXPECT_EQ(r.converted_nodes, 3);
  // pool_grad's three inputs (x's Transpose also feeds filter_grad) and
  // input_grad's result back to NCHW; pool_grad's own output feeds NHWC
  // nodes only.
  EXPECT_EQ(CountOps(*g, "Transpose"), 4);
  EXPECT_EQ(SourceOf(*g, "filter_grad", 0), SourceOf(*g, "pool_grad", 0));
  const std::string permute = SourceOf(*g, "input_grad", 0);
  EXPECT_EQ(DefOf(*g, permute).op(), "DataFormatVecPermute");
  EXPECT_EQ(SourceOf(*g, permute, 0), "sizes");
  std::string src, dst;
  ASSERT_TRUE(GetNodeAttr(DefOf(*g, permute), "src_format", &src).ok());
  ASSERT_TRUE(GetNodeAttr(DefOf(*g, permute), "dst_format", &dst).ok());
  EXPECT_EQ(src, "NCHW");
  EXPECT_EQ(dst, "NHWC");
  // filter_sizes is HWIO in both formats, and so is the filter gradient.
  EXPECT_EQ(SourceOf(*g, "filter_grad", 1), "sizes");
  EXPECT_EQ(SourceOf(*g, "df", 0), "filter_grad");
  EXPECT_EQ(SourceOf(*g, "input_grad", 2), "pool_grad");
  EXPECT_EQ(SourceOf(*g, "filter_grad", 2), "pool_grad");
  for (int i = 0; i < 3; ++i) EXPECT_THAT(PermOf(*g, SourceOf(*g, "pool_grad", i)), ElementsAre(0, 2, 3, 1));
  EXPECT_THAT(PermOf(*g, SourceOf(*g, "dx", 0)), ElementsAre(0, 3, 1, 2));
  ExpectReimports(*g);
}

TEST(Layout, AnElementwiseNodeWithAnInputInTheOtherFormatStays) {
  // relu_grad(pool output, y): y is an NCHW tensor from outside the chain,
  // so relu_grad stays NCHW and reads the pool through a Transpose back.
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("y", DT_FLOAT);
  const std::vector<int64_t> window = {1, 1, 2, 2};
  b.Node("pool", "MaxPool", {"x"},
         {{"T", MakeAttr(DT_FLOAT)}, {"ksize", Ints(window)}, {"strides", Ints(window)}, {"padding", MakeAttr("VALID")},
          {"data_format", MakeAttr("NCHW")}});
  b.Node("relu_grad", "ReluGrad", {"pool", "y"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(ConvertDataFormats(LayoutOptions(), g.get()).converted_nodes, 1);
  EXPECT_EQ(SourceOf(*g, "relu_grad", 1), "y");
  const std::string back = SourceOf(*g, "relu_grad", 0);
  EXPECT_THAT(PermOf(*g, back), ElementsAre(0, 3, 1, 2));
  EXPECT_EQ(SourceOf(*g, back, 0), "pool");
}

TEST(Layout, AShapeOfAConvertedTensorReadsItBeforeTheTranspose) {
  // input_sizes = Shape(pool) for an input gradient, as the Conv2D gradient
  // writes it: after the pass the Shape reads the NHWC pool and a
  // DataFormatVecPermute gives NCHW dims, so no Transpose of the pool runs.
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.Placeholder("dy", DT_FLOAT);
  const std::vector<int64_t> window = {1, 1, 2, 2};
  b.Node("pool", "MaxPool", {"x"},
         {{"T", MakeAttr(DT_FLOAT)}, {"ksize", Ints(window)}, {"strides", Ints(window)}, {"padding", MakeAttr("VALID")},
          {"data_format", MakeAttr("NCHW")}});
  b.Node("conv", "Conv2D", {"pool", "f"},
         {{"T", MakeAttr(DT_FLOAT)}, {"strides", Ints({1, 1, 1, 1})}, {"padding", MakeAttr("SAME")},
          {"data_format", MakeAttr("NCHW")}});
  b.Node("pool_shape", "Shape", {"pool"}, {{"T", MakeAttr(DT_FLOAT)}, {"out_type", MakeAttr(DT_INT32)}});
  b.Node("input_grad", "Conv2DBackpropInput", {"pool_shape", "f", "dy"},
         {{"T", MakeAttr(DT_FLOAT)}, {"strides", Ints({1, 1, 1, 1})}, {"padding", MakeAttr("SAME")},
          {"data_format", MakeAttr("NCHW")}});
  b.Identity("out", "conv", DT_FLOAT);
  b.Identity("dx", "input_grad", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(ConvertDataFormats(LayoutOptions(), g.get()).converted_nodes, 3);
  EXPECT_EQ(SourceOf(*g, "pool_shape", 0), "pool");
  const std::string to_nchw = SourceOf(*g, SourceOf(*g, "input_grad", 0), 0);
  EXPECT_EQ(DefOf(*g, to_nchw).op(), "DataFormatVecPermute");
  EXPECT_EQ(SourceOf(*g, to_nchw, 0), "pool_shape");
  // x in; conv's and input_grad's results out; dy in.
  EXPECT_EQ(CountOps(*g, "Transpose"), 4);
  EXPECT_EQ(SourceOf(*g, "conv", 0), "pool");
  ExpectReimports(*g);
}

TEST(Layout, ANodeFedByASwitchIsConverted) {
  // A TensorFlow 1 cond feeds a captured tensor to its branch through a
  // Switch. The Transpose reads Switch:1 (dead with that branch) and its
  // permutation runs after the Switch, in the Switch's frame.
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.Placeholder("p", DT_BOOL);
  b.Switch("sw", "x", "p", DT_FLOAT);
  b.Node("conv", "Conv2D", {"sw:1", "f"},
         {{"T", MakeAttr(DT_FLOAT)}, {"strides", Ints({1, 1, 1, 1})}, {"padding", MakeAttr("SAME")},
          {"data_format", MakeAttr("NCHW")}});
  b.Identity("out", "conv", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(ConvertDataFormats(LayoutOptions(), g.get()).converted_nodes, 1);
  EXPECT_EQ(FormatOf(*g, "conv"), "NHWC");
  const Node* in = g->FindNode(SourceOf(*g, "conv", 0));
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(InputsOf(*g, in->name())[0], "sw:1");
  bool after_switch = false;
  for (const Edge* e : in->input_edge(1)->src->in_edges()) after_switch |= e->IsControlEdge() && e->src->name() == "sw";
  EXPECT_TRUE(after_switch);
}

TEST(Layout, AConvertedNodesControlInputsOrderTheTransposesIntoIt) {
  // c waits for `update` before it reads x; its Transpose of x must too, and
  // so is not shared with d, which does not wait.
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.NoOp("update");
  const AttrValue nchw = MakeAttr("NCHW");
  b.Node("c", "Conv2D", {"x", "f", "^update"},
         {{"T", MakeAttr(DT_FLOAT)}, {"strides", Ints({1, 1, 1, 1})}, {"padding", MakeAttr("SAME")},
          {"data_format", nchw}});
  b.Node("d", "Conv2D", {"x", "f"},
         {{"T", MakeAttr(DT_FLOAT)}, {"strides", Ints({1, 1, 1, 1})}, {"padding", MakeAttr("SAME")},
          {"data_format", nchw}});
  b.Identity("c_out", "c", DT_FLOAT);
  b.Identity("d_out", "d", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(ConvertDataFormats(LayoutOptions(), g.get()).converted_nodes, 2);
  const std::string c_in = SourceOf(*g, "c", 0);
  const std::string d_in = SourceOf(*g, "d", 0);
  EXPECT_NE(c_in, d_in);
  EXPECT_THAT(InputsOf(*g, c_in), ::testing::Contains("^update"));
  EXPECT_THAT(InputsOf(*g, d_in), ::testing::Not(::testing::Contains("^update")));
  EXPECT_THAT(InputsOf(*g, "c"), ::testing::Contains("^update"));
}

TEST(Layout, ANodeBetweenThatLeadsToNoLayoutNodeStays) {
  // conv -> bias -> {relu -> Mul, Reshape}: nothing after the bias is a
  // convolution or a pool, so converting the bias (and the relu after it)
  // would only move conv's Transpose back to two places.
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.Placeholder("b", DT_FLOAT);
  b.Placeholder("w", DT_FLOAT);
  b.Const("flat", Tensor::FromVector<int32_t>({-1}));
  b.Node("conv", "Conv2D", {"x", "f"},
         {{"T", MakeAttr(DT_FLOAT)}, {"strides", Ints({1, 1, 1, 1})}, {"padding", MakeAttr("SAME")},
          {"data_format", MakeAttr("NCHW")}});
  b.Node("bias", "BiasAdd", {"conv", "b"}, {{"T", MakeAttr(DT_FLOAT)}, {"data_format", MakeAttr("NCHW")}});
  b.Node("relu", "Relu", {"bias"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Binary("Mul", "scaled", "relu", "w", DT_FLOAT);
  b.Node("reshaped", "Reshape", {"bias", "flat"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(ConvertDataFormats(LayoutOptions(), g.get()).converted_nodes, 1);
  EXPECT_EQ(FormatOf(*g, "bias"), "NCHW");
  EXPECT_EQ(CountOps(*g, "Transpose"), 2);  // x in, conv's result out
  EXPECT_EQ(SourceOf(*g, "relu", 0), "bias");
  ExpectReimports(*g);
}

TEST(Layout, TheTransposesRunInTheirSourcesFrame) {
  // Each permutation Const has a control edge from the tensor's producer, so
  // inside a while loop it runs in the producer's frame and iteration.
  auto g = MustBuild(NchwChain().graph());
  ASSERT_NE(g, nullptr);
  ConvertDataFormats(LayoutOptions(), g.get());
  const Node* in = g->FindNode(SourceOf(*g, "conv", 0));
  ASSERT_NE(in, nullptr);
  const Node* perm = in->input_edge(1)->src;
  bool after_x = false;
  for (const Edge* e : perm->in_edges()) after_x |= e->IsControlEdge() && e->src->name() == "x";
  EXPECT_TRUE(after_x);
}

}  // namespace
}  // namespace sluice
