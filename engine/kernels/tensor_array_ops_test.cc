// TensorArrays and stacks (engine/ops/tensor_array_ops.cc, stack_ops.cc)
// through a Session: each op in a loop-free graph gives TensorFlow's values;
// the arrays and stacks live for one step (the step's container); every bad
// input (an index out of range, an unwritten or already-read element, a
// second write, a dtype or shape mismatch, an empty or full stack, use after
// close) fails naming the node, never crashing; a stack filled in one loop
// frame is emptied in reverse by another (what TensorFlow's while_loop
// gradients do); and the symbolic gradients of
// Read/Write/Gather/Scatter/Split/Concat chains (TensorFlow's
// tensor_array_grad.py: a gradient array per source) give the right values,
// zeros for elements nothing read.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/framework/device.h"
#include "engine/graph/gradients.h"
#include "engine/graph/graph.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TensorArrayTest : public ::testing::Test {
 protected:
  // A TensorArrayV3 node "name" of `size` floats; "name:1" is its flow.
  std::string Array(const std::string& name, int size, std::map<std::string, AttrValue> attrs = {}) {
    attrs.emplace("dtype", MakeAttr(DT_FLOAT));
    return b_.Node(name, "TensorArrayV3", {b_.Const(name + "_size", Tensor::Scalar<int32_t>(size))}, attrs);
  }
  std::string Write(const std::string& name, const std::string& ta, int index, const std::string& value,
                    const std::string& flow, DataType dtype = DT_FLOAT, const std::string& after = "") {
    std::vector<std::string> inputs = {ta, b_.Const(name + "_index", Tensor::Scalar<int32_t>(index)), value, flow};
    if (!after.empty()) inputs.push_back("^" + after);
    return b_.Node(name, "TensorArrayWriteV3", inputs, {{"T", MakeAttr(dtype)}});
  }
  std::string Read(const std::string& name, const std::string& ta, int index, const std::string& flow,
                   std::vector<std::string> control = {}) {
    std::vector<std::string> inputs = {ta, b_.Const(name + "_index", Tensor::Scalar<int32_t>(index)), flow};
    for (const std::string& c : control) inputs.push_back("^" + c);
    return b_.Node(name, "TensorArrayReadV3", inputs, {{"dtype", MakeAttr(DT_FLOAT)}});
  }
  std::string Floats(const std::string& name, std::vector<float> v, TensorShape shape) {
    return b_.Const(name, Tensor::FromVector<float>(v, shape));
  }
  void Start() { Start(b_.graph()); }
  void Start(const GraphDef& def) {
    auto session = NewSession(SessionOptions());
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(session).value();
    absl::Status s = session_->Create(def);
    ASSERT_TRUE(s.ok()) << s;
  }
  absl::Status Run(const std::vector<std::string>& fetches, const std::vector<std::string>& targets = {}) {
    out_.clear();
    return session_->Run({}, fetches, targets, &out_);
  }
  std::vector<float> Out(int i) const {
    return std::vector<float>(out_[i].data<float>(), out_[i].data<float>() + out_[i].NumElements());
  }
  // Runs `node` expecting InvalidArgument naming it.
  void ExpectInvalid(const std::string& node, const std::string& words) {
    absl::Status s = Run({}, {node});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << node << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr("'" + node + "'")) << s;
    EXPECT_THAT(s.message(), HasSubstr(words)) << s;
  }

  GraphDefBuilder b_;
  std::unique_ptr<Session> session_;
  std::vector<Tensor> out_;
};

TEST_F(TensorArrayTest, WriteReadGatherConcatSize) {
  Array("ta", 3, {{"clear_after_read", MakeAttr(false)}});
  std::string flow = "ta:1";
  flow = Write("w0", "ta", 0, Floats("x0", {1, 2}, TensorShape({2})), flow);
  flow = Write("w1", "ta", 1, Floats("x1", {3, 4}, TensorShape({2})), flow);
  flow = Write("w2", "ta", 2, Floats("x2", {5, 6}, TensorShape({2})), flow);
  Read("read1", "ta", 1, flow);
  b_.Node("gather", "TensorArrayGatherV3", {"ta", b_.Const("idx", Tensor::FromVector<int32_t>({2, 0})), flow},
          {{"dtype", MakeAttr(DT_FLOAT)}});
  b_.Node("concat", "TensorArrayConcatV3", {"ta", flow}, {{"dtype", MakeAttr(DT_FLOAT)}});
  b_.Node("size", "TensorArraySizeV3", {"ta", flow});
  Start();
  absl::Status s = Run({"read1", "gather", "concat:0", "concat:1", "size"});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Out(0), (std::vector<float>{3, 4}));
  EXPECT_EQ(out_[1].shape(), TensorShape({2, 2}));
  EXPECT_EQ(Out(1), (std::vector<float>{5, 6, 1, 2}));
  EXPECT_EQ(Out(2), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_THAT(std::vector<int64_t>(out_[3].data<int64_t>(), out_[3].data<int64_t>() + 3), ElementsAre(2, 2, 2));
  EXPECT_EQ(out_[4].data<int32_t>()[0], 3);
  // Each step makes its own array: the same fetches succeed again.
  s = Run({"read1"});
  ASSERT_TRUE(s.ok()) << s;
}

// A gather's element_shape attr is what its static shape trusts: elements
// of another shape fail the node instead of leaving it.
TEST_F(TensorArrayTest, GatherRefusesElementsOutsideItsElementShape) {
  Array("ta", 1);
  std::string flow = Write("w0", "ta", 0, Floats("x0", {1, 2}, TensorShape({2})), "ta:1");
  TensorShapeProto three;
  three.add_dim()->set_size(3);
  b_.Node("gather", "TensorArrayGatherV3", {"ta", b_.Const("idx", Tensor::FromVector<int32_t>({0})), flow},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"element_shape", MakeAttr(three)}});
  Start();
  ExpectInvalid("gather", "gathered elements have shape [2], not the element_shape [3] this node declares");
}

TEST_F(TensorArrayTest, ScatterSplitDynamicSizeAndEmptyGather) {
  Array("ta", 2);
  std::string scattered = b_.Node(
      "scatter", "TensorArrayScatterV3",
      {"ta", b_.Const("idx", Tensor::FromVector<int32_t>({1, 0})), Floats("v", {1, 2, 3, 4, 5, 6}, {2, 3}), "ta:1"},
      {{"T", MakeAttr(DT_FLOAT)}});
  Read("read0", "ta", 0, scattered);
  Array("parts", 2);
  std::string split = b_.Node("split", "TensorArraySplitV3",
                              {"parts", Floats("p", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2}),
                               b_.Const("lengths", Tensor::FromVector<int64_t>({2, 3})), "parts:1"},
                              {{"T", MakeAttr(DT_FLOAT)}});
  Read("part1", "parts", 1, split);
  Array("grow", 1, {{"dynamic_size", MakeAttr(true)}});
  std::string grown = Write("grow_w", "grow", 4, Floats("g", {7}, {}), "grow:1");
  b_.Node("grown_size", "TensorArraySizeV3", {"grow", grown});
  TensorShapeProto two;
  two.add_dim()->set_size(2);
  Array("empty", 0, {{"element_shape", MakeAttr(two)}});
  b_.Node("empty_gather", "TensorArrayGatherV3", {"empty", b_.Const("none", Tensor::FromVector<int32_t>({})), "empty:1"},
          {{"dtype", MakeAttr(DT_FLOAT)}});
  Start();
  absl::Status s = Run({"read0", "part1", "grown_size", "empty_gather"});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Out(0), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(out_[1].shape(), TensorShape({3, 2}));
  EXPECT_EQ(Out(1), (std::vector<float>{5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(out_[2].data<int32_t>()[0], 5);
  EXPECT_EQ(out_[3].shape(), TensorShape({0, 2}));
}

TEST_F(TensorArrayTest, BadUsesFailNamingTheNode) {
  TensorShapeProto two;
  two.add_dim()->set_size(2);
  Array("ta", 2, {{"element_shape", MakeAttr(two)}});
  const std::string x = Floats("x", {1, 2}, {2});
  const std::string w0 = Write("w0", "ta", 0, x, "ta:1");
  Read("read_out_of_range", "ta", 5, w0);
  Read("read_unwritten", "ta", 1, w0);
  Read("read_first", "ta", 0, w0);
  Read("read_twice", "ta", 0, w0, {"read_first"});
  Write("write_twice", "ta", 0, x, w0);
  Write("write_beyond_size", "ta", 2, x, "ta:1");
  Write("write_wrong_dtype", "ta", 1, b_.Const("ints", Tensor::FromVector<int32_t>({1, 2})), "ta:1", DT_INT32);
  Write("write_wrong_shape", "ta", 1, Floats("three", {1, 2, 3}, {3}), "ta:1");
  Write("write_after_read", "ta", 0, x, w0, DT_FLOAT, "read_first");
  b_.Node("close", "TensorArrayCloseV3", {"ta", "^" + w0});
  Read("read_closed", "ta", 0, w0, {"close"});
  b_.Node("negative_size", "TensorArrayV3", {b_.Const("minus", Tensor::Scalar<int32_t>(-1))},
          {{"dtype", MakeAttr(DT_FLOAT)}});
  b_.Node("scatter_mismatch", "TensorArrayScatterV3",
          {"ta", b_.Const("idx3", Tensor::FromVector<int32_t>({0, 1, 2})), Floats("two_rows", {1, 2, 3, 4}, {2, 2}),
           "ta:1"},
          {{"T", MakeAttr(DT_FLOAT)}});
  b_.Node("split_bad_sum", "TensorArraySplitV3",
          {"ta", Floats("rows", {1, 2, 3, 4}, {2, 2}), b_.Const("len", Tensor::FromVector<int64_t>({1, 2})), "ta:1"},
          {{"T", MakeAttr(DT_FLOAT)}});
  Array("ints_ta", 1);
  b_.Node("read_wrong_dtype", "TensorArrayReadV3",
          {"ints_ta", b_.Const("i0", Tensor::Scalar<int32_t>(0)), "ints_ta:1"}, {{"dtype", MakeAttr(DT_INT32)}});
  Start();
  ExpectInvalid("read_out_of_range", "array size is: 2");
  ExpectInvalid("read_unwritten", "not yet been written");
  ExpectInvalid("read_twice", "twice");
  ExpectInvalid("write_twice", "already been written");
  ExpectInvalid("write_beyond_size", "not resizeable");
  ExpectInvalid("write_wrong_dtype", "dtype");
  ExpectInvalid("write_wrong_shape", "incompatible");
  ExpectInvalid("write_after_read", "already been read");
  ExpectInvalid("read_closed", "closed");
  ExpectInvalid("negative_size", ">= 0");
  ExpectInvalid("scatter_mismatch", "len(indices)");
  ExpectInvalid("split_bad_sum", "sum of lengths");
  ExpectInvalid("read_wrong_dtype", "int32");
}

TEST_F(TensorArrayTest, StacksPushPopAndFailNamingTheNode) {
  b_.Node("stack", "StackV2", {b_.Const("unbounded", Tensor::Scalar<int32_t>(-1))},
          {{"elem_type", MakeAttr(DT_FLOAT)}, {"stack_name", MakeAttr("s")}});
  std::vector<std::string> pushes;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> in = {"stack", Floats("v" + std::to_string(i), {float(i), float(10 * i)}, {2})};
    if (i > 0) in.push_back("^" + pushes.back());
    pushes.push_back(b_.Node("push" + std::to_string(i), "StackPushV2", in,
                             {{"T", MakeAttr(DT_FLOAT)}, {"swap_memory", MakeAttr(true)}}));
  }
  std::string last = pushes.back();
  for (int i = 0; i < 3; ++i) {
    last = b_.Node("pop" + std::to_string(i), "StackPopV2", {"stack", "^" + last}, {{"elem_type", MakeAttr(DT_FLOAT)}});
  }
  b_.Node("pop_empty", "StackPopV2", {"stack", "^" + last}, {{"elem_type", MakeAttr(DT_FLOAT)}});
  b_.Node("small", "StackV2", {b_.Const("one", Tensor::Scalar<int32_t>(1))}, {{"elem_type", MakeAttr(DT_FLOAT)}});
  std::string first = b_.Node("small_push", "StackPushV2", {"small", "v0"}, {{"T", MakeAttr(DT_FLOAT)}});
  b_.Node("push_beyond_max", "StackPushV2", {"small", "v1", "^" + first}, {{"T", MakeAttr(DT_FLOAT)}});
  b_.Node("push_wrong_dtype", "StackPushV2", {"small", b_.Const("int", Tensor::Scalar<int32_t>(1))},
          {{"T", MakeAttr(DT_INT32)}});
  b_.Node("close", "StackCloseV2", {"small"});
  b_.Node("push_closed", "StackPushV2", {"small", "v1", "^close"}, {{"T", MakeAttr(DT_FLOAT)}});
  Start();
  absl::Status s = Run({"push2", "pop0", "pop1", "pop2"});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Out(0), (std::vector<float>{2, 20}));
  EXPECT_EQ(Out(1), (std::vector<float>{2, 20}));
  EXPECT_EQ(Out(2), (std::vector<float>{1, 10}));
  EXPECT_EQ(Out(3), (std::vector<float>{0, 0}));
  ExpectInvalid("pop_empty", "empty");
  ExpectInvalid("push_beyond_max", "max_size");
  ExpectInvalid("push_wrong_dtype", "int32");
  ExpectInvalid("push_closed", "closed");
}

// No per-step container outlives its step.
TEST_F(TensorArrayTest, ArraysAndStacksLiveForOneStep) {
  Array("ta", 1);
  Write("w", "ta", 0, Floats("x", {1}, {1}), "ta:1");
  b_.Node("stack", "StackV2", {b_.Const("max", Tensor::Scalar<int32_t>(-1))}, {{"elem_type", MakeAttr(DT_FLOAT)}});
  b_.Node("push", "StackPushV2", {"stack", "x"}, {{"T", MakeAttr(DT_FLOAT)}});
  Start();
  for (int step = 0; step < 3; ++step) ASSERT_TRUE(Run({"w", "push"}).ok());
  for (const auto& device : DeviceMgr::Local()->devices()) {
    for (const std::string& c : device->resource_manager()->Containers()) {
      EXPECT_FALSE(absl::StartsWith(c, "__per_step_")) << c << " outlived its step on " << device->name();
    }
  }
}

// Loop 1 pushes i = 1, 2, 3 onto a stack whose handle enters its frame as an
// invariant; loop 2, which runs after loop 1's exit, pops three times and
// accumulates s = 10 * s + pop, so the order of pops shows: 321.
TEST_F(TensorArrayTest, AStackFilledInOneLoopIsEmptiedInReverseByAnother) {
  b_.Node("stack", "StackV2", {b_.Const("max", Tensor::Scalar<int32_t>(-1))}, {{"elem_type", MakeAttr(DT_INT32)}});
  const std::string one = b_.Const("one", Tensor::Scalar<int32_t>(1));
  const std::string zero = b_.Const("zero", Tensor::Scalar<int32_t>(0));
  const std::string ten = b_.Const("ten", Tensor::Scalar<int32_t>(10));
  const std::string limit = b_.Const("limit", Tensor::Scalar<int32_t>(4));
  // The counter of a loop "p": i from `start` while i < `lim` (invariant); returns i in the body.
  auto counter = [&](const std::string& p, const std::string& start, const std::string& lim) {
    std::string lim_e = b_.Enter(p + "lim_e", lim, DT_INT32, p, true, 1);
    std::string i_e = b_.Enter(p + "i_e", start, DT_INT32, p, false, 1);
    std::string i_m = b_.Merge(p + "i_m", {i_e, p + "i_next"}, DT_INT32);
    std::string cond = b_.LoopCond(p + "cond", b_.Binary("Less", p + "less", i_m, lim_e, DT_INT32));
    std::string i_sw = b_.Switch(p + "i_sw", i_m, cond, DT_INT32);
    b_.Exit(p + "i_exit", i_sw + ":0", DT_INT32);
    return std::make_pair(cond, b_.Identity(p + "i_body", i_sw + ":1", DT_INT32));
  };
  // Loop 1 ("fwd"): push i; the next i waits for the push.
  auto [fwd_cond, fwd_i] = counter("fwd", one, limit);
  std::string fwd_stack = b_.Enter("fwdstack_e", "stack", DT_RESOURCE, "fwd", true, 1);
  std::string push = b_.Node("push", "StackPushV2", {fwd_stack, fwd_i}, {{"T", MakeAttr(DT_INT32)}});
  std::string fwd_one = b_.Enter("fwdone_e", one, DT_INT32, "fwd", true, 1);
  b_.NextIteration("fwdi_next", b_.Binary("Add", "fwdi_new", push, fwd_one, DT_INT32), DT_INT32);
  // Loop 2 ("bwd"): from 1 to loop 1's final i (4), pop and accumulate.
  auto [bwd_cond, bwd_i] = counter("bwd", one, "fwdi_exit");
  std::string bwd_stack = b_.Enter("bwdstack_e", "stack", DT_RESOURCE, "bwd", true, 1);
  std::string bwd_one = b_.Enter("bwdone_e", one, DT_INT32, "bwd", true, 1);
  std::string bwd_ten = b_.Enter("bwdten_e", ten, DT_INT32, "bwd", true, 1);
  std::string s_e = b_.Enter("bwds_e", zero, DT_INT32, "bwd", false, 1);
  std::string s_m = b_.Merge("bwds_m", {s_e, "bwds_next"}, DT_INT32);
  std::string s_sw = b_.Switch("bwds_sw", s_m, bwd_cond, DT_INT32);
  b_.Exit("result", s_sw + ":0", DT_INT32);
  std::string s_body = b_.Identity("bwds_body", s_sw + ":1", DT_INT32);
  std::string pop = b_.Node("pop", "StackPopV2", {bwd_stack, "^" + bwd_i}, {{"elem_type", MakeAttr(DT_INT32)}});
  std::string s_new =
      b_.Binary("Add", "bwds_new", b_.Binary("Mul", "bwds_times10", s_body, bwd_ten, DT_INT32), pop, DT_INT32);
  b_.NextIteration("bwds_next", s_new, DT_INT32);
  b_.NextIteration("bwdi_next", b_.Binary("Add", "bwdi_new", bwd_i, bwd_one, DT_INT32), DT_INT32);
  Start();
  for (int step = 0; step < 2; ++step) {
    absl::Status s = Run({"result"});
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(out_[0].data<int32_t>()[0], 321);
  }
}

// ys = {read(0), gather([3, 1, 2])} of an array filled by write(0, x0),
// write(1, x1) and scatter([2, 3], v); with grad_ys {c0, c1}:
// d/dx0 = c0, d/dx1 = c1[1], d/dv = [c1[2]; c1[0]]. A second array filled by
// split(p, [2, 3]) and read whole by concat has d/dp = its grad_y; a third,
// scattered with two rows of which only row 1 is read, gives zeros for row 0.
TEST_F(TensorArrayTest, GradientsOfReadWriteGatherScatterSplitConcat) {
  Array("ta", 4);
  std::string flow = Write("w0", "ta", 0, Floats("x0", {1, 2}, {2}), "ta:1");
  flow = Write("w1", "ta", 1, Floats("x1", {3, 4}, {2}), flow);
  flow = b_.Node("scatter", "TensorArrayScatterV3",
                 {"ta", b_.Const("idx23", Tensor::FromVector<int32_t>({2, 3})), Floats("v", {5, 6, 7, 8}, {2, 2}), flow},
                 {{"T", MakeAttr(DT_FLOAT)}});
  Read("r0", "ta", 0, flow);
  b_.Node("gather", "TensorArrayGatherV3", {"ta", b_.Const("idx312", Tensor::FromVector<int32_t>({3, 1, 2})), flow},
          {{"dtype", MakeAttr(DT_FLOAT)}});
  Array("parts", 2);
  std::string split = b_.Node("split", "TensorArraySplitV3",
                              {"parts", Floats("p", {1, 2, 3, 4, 5}, {5}),
                               b_.Const("lengths", Tensor::FromVector<int64_t>({2, 3})), "parts:1"},
                              {{"T", MakeAttr(DT_FLOAT)}});
  b_.Node("concat", "TensorArrayConcatV3", {"parts", split}, {{"dtype", MakeAttr(DT_FLOAT)}});
  Array("half", 2);
  std::string half = b_.Node(
      "half_scatter", "TensorArrayScatterV3",
      {"half", b_.Const("idx01", Tensor::FromVector<int32_t>({0, 1})), Floats("u", {1, 2, 3, 4, 5, 6}, {2, 3}), "half:1"},
      {{"T", MakeAttr(DT_FLOAT)}});
  Read("half_r1", "half", 1, half);

  auto graph = GraphFromGraphDef(b_.graph());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Graph* g = graph->get();
  auto out = [g](const char* name, int i = 0) { return Output{g->FindNode(name), i}; };
  GraphBuilder consts(g, "grad_ys");
  Output c0 = consts.Const("c0", Tensor::FromVector<float>({10, 20}));
  Output c1 = consts.Const("c1", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})));
  Output c2 = consts.Const("c2", Tensor::FromVector<float>({-1, -2, -3, -4, -5}));
  Output c3 = consts.Const("c3", Tensor::FromVector<float>({7, 8, 9}));
  std::vector<Gradient> grads;
  absl::Status s = AddSymbolicGradients(g, {out("r0"), out("gather"), out("concat"), out("half_r1")},
                                        {out("x0"), out("x1"), out("v"), out("p"), out("u")}, {c0, c1, c2, c3},
                                        &grads);
  ASSERT_TRUE(s.ok()) << s;
  std::vector<std::string> fetches;
  for (const Gradient& grad : grads) {
    ASSERT_TRUE(grad.present());
    fetches.push_back(grad.dense.name());
  }
  GraphDef def;
  g->ToGraphDef(&def);
  Start(def);
  s = Run(fetches);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Out(0), (std::vector<float>{10, 20}));
  EXPECT_EQ(Out(1), (std::vector<float>{3, 4}));
  EXPECT_EQ(Out(2), (std::vector<float>{5, 6, 1, 2}));
  EXPECT_EQ(Out(3), (std::vector<float>{-1, -2, -3, -4, -5}));
  EXPECT_EQ(out_[4].shape(), TensorShape({2, 3}));
  EXPECT_EQ(Out(4), (std::vector<float>{0, 0, 0, 7, 8, 9}));
}

}  // namespace
}  // namespace sluice
