// Spec for kernel selection: with the oneDNN kernels linked, float32 Conv2D,
// its backprops and _FusedConv2D on a CPU get `_kernel: "onednn"`; the same
// ops in float64, on a GPU, and ops without a oneDNN kernel (MatMul) keep no
// label; a node already labeled is left as it is. With a fallback label, the
// nodes marked also name the kernel that takes the shapes theirs does not.
#include "engine/graph/kernel_selection.h"

#include <map>
#include <memory>
#include <string>

#include "engine/framework/op_kernel.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

constexpr char kCpu[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kGpu[] = "/job:localhost/replica:0/task:0/device:GPU:0";

std::map<std::string, AttrValue> ConvAttrs(DataType t) {
  return {{"T", MakeAttr(t)},
          {"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})},
          {"padding", MakeAttr("SAME")}};
}

std::string AttrOf(const Graph& g, const std::string& name, const char* attr) {
  for (Node* n : g.nodes()) {
    if (n->name() != name) continue;
    const AttrValue* v = FindAttr(n->def(), attr);
    return v == nullptr ? "" : v->s();
  }
  ADD_FAILURE() << "no node " << name;
  return "";
}

std::string LabelOf(const Graph& g, const std::string& name) { return AttrOf(g, name, kKernelLabelAttr); }

TEST(KernelSelection, MarksTheNodesThatHaveALabeledKernel) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("w", DT_FLOAT);
  b.Placeholder("xd", DT_DOUBLE);
  b.Placeholder("wd", DT_DOUBLE);
  b.Placeholder("sizes", DT_INT32);
  b.Node("conv", "Conv2D", {"x", "w"}, ConvAttrs(DT_FLOAT));
  b.Node("conv_gpu", "Conv2D", {"x", "w"}, ConvAttrs(DT_FLOAT));
  b.Node("conv_double", "Conv2D", {"xd", "wd"}, ConvAttrs(DT_DOUBLE));
  b.Node("dx", "Conv2DBackpropInput", {"sizes", "w", "conv"}, ConvAttrs(DT_FLOAT));
  b.Node("dw", "Conv2DBackpropFilter", {"x", "sizes", "conv"}, ConvAttrs(DT_FLOAT));
  b.Node("mm", "MatMul", {"x", "w"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto labeled = ConvAttrs(DT_FLOAT);
  labeled[kKernelLabelAttr] = MakeAttr("other");
  b.Node("conv_other", "Conv2D", {"x", "w"}, labeled);
  auto g = GraphFromGraphDef(b.graph());
  ASSERT_TRUE(g.ok()) << g.status();
  for (Node* n : (*g)->nodes()) n->set_assigned_device(n->name() == "conv_gpu" ? kGpu : kCpu);

  KernelSelectionOptions options;
  options.label = "onednn";
  EXPECT_EQ(SelectLabeledKernels(options, g->get()), 3);
  EXPECT_EQ(LabelOf(**g, "conv"), "onednn");
  EXPECT_EQ(LabelOf(**g, "dx"), "onednn");
  EXPECT_EQ(LabelOf(**g, "dw"), "onednn");
  EXPECT_EQ(LabelOf(**g, "conv_gpu"), "");
  EXPECT_EQ(LabelOf(**g, "conv_double"), "");
  EXPECT_EQ(LabelOf(**g, "mm"), "");
  EXPECT_EQ(LabelOf(**g, "conv_other"), "other");
  EXPECT_EQ(LabelOf(**g, "x"), "");

  EXPECT_EQ(AttrOf(**g, "conv", kKernelFallbackAttr), "") << "no fallback label was asked for";

  // A label nothing registers marks nothing.
  options.label = "no_such_library";
  EXPECT_EQ(SelectLabeledKernels(options, g->get()), 0);
}

TEST(KernelSelection, AFallbackLabelGoesToTheMarkedNodesThatHaveItsKernel) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("w", DT_FLOAT);
  b.Placeholder("sizes", DT_INT32);
  b.Node("conv", "Conv2D", {"x", "w"}, ConvAttrs(DT_FLOAT));
  b.Node("dw", "Conv2DBackpropFilter", {"x", "sizes", "conv"}, ConvAttrs(DT_FLOAT));
  auto g = GraphFromGraphDef(b.graph());
  ASSERT_TRUE(g.ok()) << g.status();
  for (Node* n : (*g)->nodes()) n->set_assigned_device(kCpu);

  KernelSelectionOptions options;
  options.label = "winograd";
  options.fallback_label = "no_such_library";  // not registered: no fallback attr
  EXPECT_EQ(SelectLabeledKernels(options, g->get()), 2);
  EXPECT_EQ(LabelOf(**g, "conv"), "winograd");
  EXPECT_EQ(AttrOf(**g, "conv", kKernelFallbackAttr), "");

  auto again = GraphFromGraphDef(b.graph());
  ASSERT_TRUE(again.ok()) << again.status();
  for (Node* n : (*again)->nodes()) n->set_assigned_device(kCpu);
  options.fallback_label = "onednn";
  EXPECT_EQ(SelectLabeledKernels(options, again->get()), 2);
  EXPECT_EQ(LabelOf(**again, "conv"), "winograd");
  EXPECT_EQ(AttrOf(**again, "conv", kKernelFallbackAttr), "onednn");
  EXPECT_EQ(AttrOf(**again, "dw", kKernelFallbackAttr), "onednn");
  EXPECT_EQ(AttrOf(**again, "x", kKernelFallbackAttr), "");
}

}  // namespace
}  // namespace sluice
