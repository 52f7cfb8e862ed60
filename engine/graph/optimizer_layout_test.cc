// Spec for the data format pass: NCHW convolution and pooling nodes on a CPU
// become NHWC with their window attrs rearranged, the nodes between them
// that lead to another such node follow, and a chain keeps one Transpose
// where it starts and one where it ends; shape inputs get a
// DataFormatVecPermute; a node's control inputs order its Transposes; a
// user's own Transposes between NHWC and NCHW cancel with the pass's; an NHWC
// graph is untouched; a device that asks for NCHW gets the reverse; nodes on
// a device without a Transpose kernel stay. (Values: the NCHW cases of
// engine/kernels/harness/nn_cases.cc run through the pass, gradients
// included; loops, conds and fetches: engine/runtime/layout_session_test.cc.)
#include "engine/graph/optimizer_layout.h"

#include <map>
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

// A float convolution's (or its backprops') attrs: stride 1, SAME, NCHW.
std::map<std::string, AttrValue> NchwConvAttrs() {
  return {{"T", MakeAttr(DT_FLOAT)},
          {"strides", Ints({1, 1, 1, 1})},
          {"padding", MakeAttr("SAME")},
          {"data_format", MakeAttr("NCHW")}};
}

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
  b.Node("input_grad", "Conv2DBackpropInput", {"sizes", "f", "pool_grad"}, NchwConvAttrs());
  b.Node("filter_grad", "Conv2DBackpropFilter", {"x", "sizes", "pool_grad"}, NchwConvAttrs());
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
  // DataFormatVecPermute gives NCHW dims to `dims`, so no Transpose of the
  // pool runs. The converted input_grad wants NHWC dims: its permute back
  // and that one cancel, and it reads the Shape.
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.Placeholder("dy", DT_FLOAT);
  const std::vector<int64_t> window = {1, 1, 2, 2};
  b.Node("pool", "MaxPool", {"x"},
         {{"T", MakeAttr(DT_FLOAT)}, {"ksize", Ints(window)}, {"strides", Ints(window)}, {"padding", MakeAttr("VALID")},
          {"data_format", MakeAttr("NCHW")}});
  b.Node("conv", "Conv2D", {"pool", "f"}, NchwConvAttrs());
  b.Node("pool_shape", "Shape", {"pool"}, {{"T", MakeAttr(DT_FLOAT)}, {"out_type", MakeAttr(DT_INT32)}});
  b.Node("input_grad", "Conv2DBackpropInput", {"pool_shape", "f", "dy"}, NchwConvAttrs());
  b.Identity("out", "conv", DT_FLOAT);
  b.Identity("dx", "input_grad", DT_FLOAT);
  b.Identity("dims", "pool_shape", DT_INT32);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  const LayoutResult r = ConvertDataFormats(LayoutOptions(), g.get());
  EXPECT_EQ(r.converted_nodes, 3);
  EXPECT_EQ(SourceOf(*g, "pool_shape", 0), "pool");
  const std::string to_nchw = SourceOf(*g, "dims", 0);
  EXPECT_EQ(DefOf(*g, to_nchw).op(), "DataFormatVecPermute");
  EXPECT_EQ(SourceOf(*g, to_nchw, 0), "pool_shape");
  EXPECT_EQ(SourceOf(*g, "input_grad", 0), "pool_shape");
  EXPECT_EQ(CountOps(*g, "DataFormatVecPermute"), 1);
  EXPECT_EQ(r.cancelled_permutes, 1);
  // x in; conv's and input_grad's results out; dy in.
  EXPECT_EQ(CountOps(*g, "Transpose"), 4);
  EXPECT_EQ(SourceOf(*g, "conv", 0), "pool");
  ExpectReimports(*g);
}

TEST(Layout, ANodeFedByASwitchIsConverted) {
  // A TensorFlow 1 cond feeds a captured tensor to its branch through a
  // Switch. The Transpose reads Switch:1, and is dead with that branch.
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.Placeholder("p", DT_BOOL);
  b.Switch("sw", "x", "p", DT_FLOAT);
  b.Node("conv", "Conv2D", {"sw:1", "f"}, NchwConvAttrs());
  b.Identity("out", "conv", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(ConvertDataFormats(LayoutOptions(), g.get()).converted_nodes, 1);
  EXPECT_EQ(FormatOf(*g, "conv"), "NHWC");
  const Node* in = g->FindNode(SourceOf(*g, "conv", 0));
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(InputsOf(*g, in->name())[0], "sw:1");
}

TEST(Layout, AConvertedNodesControlInputsOrderTheTransposesIntoIt) {
  // c waits for `update` before it reads x; its Transpose of x must too, and
  // so is not shared with d, which does not wait.
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.NoOp("update");
  b.Node("c", "Conv2D", {"x", "f", "^update"}, NchwConvAttrs());
  b.Node("d", "Conv2D", {"x", "f"}, NchwConvAttrs());
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
  b.Node("conv", "Conv2D", {"x", "f"}, NchwConvAttrs());
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

// The names of the nodes with control edges into the permutation Const of
// the Transpose that feeds `node`'s input `i`.
std::vector<std::string> PermControls(const Graph& g, const std::string& node, int i) {
  const Node* t = g.FindNode(SourceOf(g, node, i));
  EXPECT_NE(t, nullptr);
  std::vector<std::string> controls;
  if (t == nullptr) return controls;
  for (const Edge* e : t->input_edge(1)->src->in_edges()) {
    if (e->IsControlEdge()) controls.push_back(e->src->name());
  }
  return controls;
}

TEST(Layout, TheTransposesRunInTheirSourcesFrame) {
  // A permutation Const inside a while loop has a control edge from the
  // tensor's producer, so it runs in the producer's frame and iteration (here
  // the Enter, whose output is in the loop, and the conv).
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.Enter("x_in", "x", DT_FLOAT, "loop", true);
  b.Enter("f_in", "f", DT_FLOAT, "loop", true);
  b.Node("conv", "Conv2D", {"x_in", "f_in"}, NchwConvAttrs());
  b.Exit("conv_out", "conv", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(ConvertDataFormats(LayoutOptions(), g.get()).converted_nodes, 1);
  EXPECT_THAT(PermControls(*g, "conv", 0), ElementsAre("x_in"));
  EXPECT_THAT(PermControls(*g, "conv_out", 0), ElementsAre("conv"));
}

TEST(Layout, InTheRootFrameThePermutationsWaitForNothing) {
  // In the root frame a permutation Const has no control edge: one would
  // only add a control transfer when the producer sits on another device.
  auto g = MustBuild(NchwChain().graph());
  ASSERT_NE(g, nullptr);
  ConvertDataFormats(LayoutOptions(), g.get());
  EXPECT_THAT(PermControls(*g, "conv", 0), ::testing::IsEmpty());
  EXPECT_THAT(PermControls(*g, "out", 0), ::testing::IsEmpty());
}

// images (NHWC) -> Transpose to NCHW -> the NCHW chain -> out -> Transpose
// back to NHWC -> result: what a TensorFlow graph written for a GPU does with
// NHWC images. `into` and `back` are the two permutations.
std::unique_ptr<Graph> TransposedNchwChain(const std::vector<int32_t>& into = {0, 3, 1, 2},
                                           const std::vector<int32_t>& back = {0, 2, 3, 1}) {
  GraphDefBuilder b = NchwChain();
  b.Placeholder("images", DT_FLOAT);
  b.Const("into_perm", Tensor::FromVector<int32_t>(into));
  b.Const("back_perm", Tensor::FromVector<int32_t>(back));
  b.Node("into_nchw", "Transpose", {"images", "into_perm"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("back_to_nhwc", "Transpose", {"out", "back_perm"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Identity("result", "back_to_nhwc", DT_FLOAT);
  GraphDef def = b.graph();
  for (NodeDef& n : *def.mutable_node()) {
    if (n.name() == "conv") n.set_input(0, "into_nchw");
  }
  return MustBuild(def);
}

TEST(Layout, AUsersTransposesIntoNchwAndBackCancelWithOurs) {
  auto g = TransposedNchwChain();
  ASSERT_NE(g, nullptr);
  const LayoutResult r = ConvertDataFormats(LayoutOptions(), g.get());
  EXPECT_EQ(r.converted_nodes, 6);  // the chain and `out`, an Identity that leads to back_to_nhwc
  EXPECT_EQ(r.removed_user_transposes, 2);
  EXPECT_EQ(r.transposes, 0);
  EXPECT_EQ(CountOps(*g, "Transpose"), 0);
  EXPECT_EQ(SourceOf(*g, "conv", 0), "images");
  EXPECT_EQ(SourceOf(*g, "out", 0), "conv2");
  EXPECT_EQ(SourceOf(*g, "result", 0), "out");
  EXPECT_EQ(g->FindNode("into_perm"), nullptr);
  EXPECT_EQ(g->FindNode("back_perm"), nullptr);
  ExpectReimports(*g);
}

TEST(Layout, OtherPermutationsAndKeptTransposesStay) {
  // A permutation that is not NHWC <-> NCHW ([0, 3, 2, 1] swaps H and W as
  // well) is the user's own business; a kept node (a target) is not bypassed.
  auto g = TransposedNchwChain({0, 3, 2, 1});
  ASSERT_NE(g, nullptr);
  LayoutOptions keep_back;
  keep_back.keep = [](const Node* n) { return n->name() == "back_to_nhwc"; };
  const LayoutResult r = ConvertDataFormats(keep_back, g.get());
  EXPECT_EQ(r.removed_user_transposes, 0);
  EXPECT_EQ(SourceOf(*g, "into_nchw", 0), "images");
  EXPECT_EQ(SourceOf(*g, SourceOf(*g, "conv", 0), 0), "into_nchw");
  EXPECT_EQ(SourceOf(*g, SourceOf(*g, "back_to_nhwc", 0), 0), "out");  // `out` leads to it: NHWC
  EXPECT_EQ(SourceOf(*g, "result", 0), "back_to_nhwc");
  EXPECT_EQ(CountOps(*g, "Transpose"), 4);  // the user's two and one of ours after each
}


TEST(Layout, BatchNormsBetweenConvolutionsFollowThem) {
  // conv -> FusedBatchNormV3 -> relu -> conv2, all NCHW (resnet's block):
  // the batch norm moves to NHWC with the rest, and its gradient, which reads
  // the conv's result and the relu gradient, does too.
  GraphDefBuilder b;
  for (const char* p : {"x", "f", "f2", "scale", "offset", "dy"}) b.Placeholder(p, DT_FLOAT);
  const AttrValue nchw = MakeAttr("NCHW");
  auto conv = [&](const std::string& name, const std::string& in, const std::string& filter) {
    b.Node(name, "Conv2D", {in, filter}, NchwConvAttrs());
  };
  const std::map<std::string, AttrValue> batch_norm = {
      {"T", MakeAttr(DT_FLOAT)}, {"U", MakeAttr(DT_FLOAT)}, {"data_format", nchw}, {"is_training", MakeAttr(true)}};
  conv("conv", "x", "f");
  b.Node("bn", "FusedBatchNormV3", {"conv", "scale", "offset", "scale", "offset"},
         batch_norm);
  b.Node("relu", "Relu", {"bn"}, {{"T", MakeAttr(DT_FLOAT)}});
  conv("conv2", "relu", "f2");
  b.Identity("out", "conv2", DT_FLOAT);
  // The backward pass of bn and relu, fed a gradient from conv2's input.
  b.Node("conv2_dx", "Conv2DBackpropInput", {"dims", "f2", "dy"}, NchwConvAttrs());
  b.Node("dims", "Shape", {"relu"}, {{"T", MakeAttr(DT_FLOAT)}, {"out_type", MakeAttr(DT_INT32)}});
  b.Node("relu_grad", "ReluGrad", {"conv2_dx", "relu"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("bn_grad", "FusedBatchNormGradV3", {"relu_grad", "conv", "scale", "bn:3", "bn:4", "bn:5"},
         batch_norm);
  b.Const("f_sizes", Tensor::FromVector<int32_t>({3, 3, 1, 4}));
  b.Node("conv_df", "Conv2DBackpropFilter", {"x", "f_sizes", "bn_grad"}, NchwConvAttrs());
  b.Identity("df", "conv_df", DT_FLOAT);
  b.Identity("dscale", "bn_grad:1", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  const LayoutResult r = ConvertDataFormats(LayoutOptions(), g.get());
  for (const char* n : {"conv", "bn", "conv2", "conv2_dx", "bn_grad", "conv_df"}) {
    EXPECT_EQ(FormatOf(*g, n), "NHWC") << n;
  }
  EXPECT_EQ(r.converted_nodes, 8);  // and relu, relu_grad
  EXPECT_EQ(SourceOf(*g, "bn", 0), "conv");
  EXPECT_EQ(SourceOf(*g, "relu", 0), "bn");
  EXPECT_EQ(SourceOf(*g, "conv2", 0), "relu");
  EXPECT_EQ(SourceOf(*g, "relu_grad", 0), "conv2_dx");
  EXPECT_EQ(SourceOf(*g, "bn_grad", 0), "relu_grad");
  EXPECT_EQ(SourceOf(*g, "bn_grad", 1), "conv");
  EXPECT_EQ(SourceOf(*g, "conv_df", 2), "bn_grad");
  EXPECT_EQ(SourceOf(*g, "dscale", 0), "bn_grad");  // 1-D: no Transpose
  // x (into conv and conv_df), dy in; conv2's result out. The shape of relu
  // reaches conv2_dx without a permute: both are NHWC now.
  EXPECT_EQ(CountOps(*g, "Transpose"), 3);
  EXPECT_EQ(CountOps(*g, "DataFormatVecPermute"), 0);
  EXPECT_EQ(SourceOf(*g, "conv2_dx", 0), "dims");
  ExpectReimports(*g);
}

TEST(Layout, ABiasAddInAnotherFormatThanItsInputStays) {
  // A BiasAdd left at its default format (NHWC) over an NCHW conv's result
  // adds along W, and so stays, reading the conv through a Transpose back.
  GraphDef def = NchwChain().graph();
  for (NodeDef& n : *def.mutable_node()) {
    if (n.name() == "bias") n.mutable_attr()->erase("data_format");
  }
  auto g = MustBuild(def);
  ASSERT_NE(g, nullptr);
  ConvertDataFormats(LayoutOptions(), g.get());
  EXPECT_EQ(FormatOf(*g, "bias"), "NHWC");
  EXPECT_THAT(PermOf(*g, SourceOf(*g, "bias", 0)), ElementsAre(0, 3, 1, 2));
  EXPECT_EQ(SourceOf(*g, SourceOf(*g, "bias", 0), 0), "conv");
}

TEST(Layout, AResidualAddAndAShapeNFollowTheConversion) {
  // conv1 -> relu -> conv2; add = relu + conv2 -> conv3, all NCHW (a residual
  // block), and an input gradient whose input_sizes come from a ShapeN, as
  // TensorFlow's Conv2D gradient writes it: the add runs in NHWC between the
  // convolutions, and the ShapeN reads relu itself.
  GraphDefBuilder b;
  for (const char* p : {"x", "f1", "f2", "f3", "dy"}) b.Placeholder(p, DT_FLOAT);
  const std::map<std::string, AttrValue> conv_attrs = NchwConvAttrs();
  b.Node("conv1", "Conv2D", {"x", "f1"}, conv_attrs);
  b.Node("relu", "Relu", {"conv1"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("conv2", "Conv2D", {"relu", "f2"}, conv_attrs);
  b.Binary("AddV2", "add", "relu", "conv2", DT_FLOAT);
  b.Node("conv3", "Conv2D", {"add", "f3"}, conv_attrs);
  b.Identity("out", "conv3", DT_FLOAT);
  b.Node("sizes", "ShapeN", {"relu", "f2"},
         {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(2)}, {"out_type", MakeAttr(DT_INT32)}});
  b.Node("dx", "Conv2DBackpropInput", {"sizes", "f2", "dy"}, conv_attrs);
  b.Identity("dx_out", "dx", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  const LayoutResult r = ConvertDataFormats(LayoutOptions(), g.get());
  EXPECT_EQ(r.converted_nodes, 6);  // four convolutions, relu and add
  EXPECT_EQ(SourceOf(*g, "add", 0), "relu");
  EXPECT_EQ(SourceOf(*g, "add", 1), "conv2");
  EXPECT_EQ(SourceOf(*g, "conv3", 0), "add");
  EXPECT_EQ(SourceOf(*g, "sizes", 0), "relu");
  EXPECT_EQ(SourceOf(*g, "sizes", 1), "f2");
  EXPECT_EQ(InputsOf(*g, "dx")[0], "sizes");  // NHWC dims for an NHWC node: the permutes cancelled
  EXPECT_EQ(CountOps(*g, "DataFormatVecPermute"), 0);
  EXPECT_EQ(CountOps(*g, "Transpose"), 4);  // x and dy in, conv3's and dx's results out
  ExpectReimports(*g);
}

TEST(Layout, TransposesOfAVariableOrByAConditionalPermutationStay) {
  // `read` transposes the variable's reference: bypassing it would make the
  // conv read the variable at its own time, after an update `read` came
  // before. `gated`'s permutation waits for a control input (in a cond, a
  // Switch that may make it dead). Neither is the user's plain NHWC -> NCHW
  // Transpose, so ours stay after them.
  GraphDefBuilder b;
  b.Variable("v", DT_FLOAT, TensorShape({1, 4, 4, 2}));
  b.Placeholder("images", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.NoOp("gate");
  b.Const("perm", Tensor::FromVector<int32_t>({0, 3, 1, 2}));
  b.Node("gated_perm", "Const", {"^gate"},
         {{"dtype", MakeAttr(DT_INT32)}, {"value", MakeAttr(Tensor::FromVector<int32_t>({0, 3, 1, 2}))}});
  b.Node("read", "Transpose", {"v", "perm"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("gated", "Transpose", {"images", "gated_perm"}, {{"T", MakeAttr(DT_FLOAT)}});
  const std::map<std::string, AttrValue> conv = NchwConvAttrs();
  b.Node("conv_v", "Conv2D", {"read", "f"}, conv);
  b.Node("conv_images", "Conv2D", {"gated", "f"}, conv);
  b.Identity("out_v", "conv_v", DT_FLOAT);
  b.Identity("out_images", "conv_images", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  const LayoutResult r = ConvertDataFormats(LayoutOptions(), g.get());
  EXPECT_EQ(r.converted_nodes, 2);
  EXPECT_EQ(r.removed_user_transposes, 0);
  EXPECT_EQ(SourceOf(*g, SourceOf(*g, "conv_v", 0), 0), "read");
  EXPECT_EQ(SourceOf(*g, SourceOf(*g, "conv_images", 0), 0), "gated");
}

}  // namespace
}  // namespace sluice
