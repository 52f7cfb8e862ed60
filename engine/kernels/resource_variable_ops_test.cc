// Resource variables (engine/ops/resource_variable_ops.cc) through a Session:
// a handle flows from VarHandleOp to the readers and writers; assign, add,
// subtract, read, gather, shape, is-initialized and destroy behave as
// TensorFlow's; a value once read never changes; the gradients of
// ReadVariableOp and ResourceGather reach the handle; and bad input (an
// uninitialized or destroyed variable, a dtype or shape mismatch, an index out
// of range) fails naming the node or the variable, never crashing. The
// ResourceApply* optimizers and ResourceScatter* are tested with the Apply*
// and Scatter* ones (training_ops_test.cc); DisableCopyOnRead is a no-op here.
#include <memory>
#include <string>
#include <vector>

#include <utility>

#include "absl/strings/str_cat.h"
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

using ::testing::HasSubstr;

int g_container = 0;

class ResourceVariableTest : public ::testing::Test {
 protected:
  ResourceVariableTest() : container_(absl::StrCat("resource_variable_ops_test_", g_container++)) {}
  ~ResourceVariableTest() override { Session::Reset({container_}); }

  std::string Handle(const std::string& name, DataType dtype = DT_FLOAT) {
    AttrValue unknown_shape;
    unknown_shape.mutable_shape()->set_unknown_rank(true);
    return b_.Node(name, "VarHandleOp", {},
                   {{"dtype", MakeAttr(dtype)}, {"shape", unknown_shape}, {"container", MakeAttr(container_)}});
  }
  std::string Op(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                 DataType dtype = DT_FLOAT) {
    return b_.Node(name, op, inputs, {{"dtype", MakeAttr(dtype)}});
  }
  void Start() {
    auto session = NewSession(SessionOptions());
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(session).value();
    absl::Status s = session_->Create(b_.graph());
    ASSERT_TRUE(s.ok()) << s;
  }
  absl::Status Run(const std::vector<std::string>& fetches, const std::vector<std::string>& targets = {}) {
    out_.clear();
    return session_->Run({}, fetches, targets, &out_);
  }
  std::vector<float> Floats(int i) const {
    return std::vector<float>(out_[i].data<float>(), out_[i].data<float>() + out_[i].NumElements());
  }

  std::string container_;
  GraphDefBuilder b_;
  std::unique_ptr<Session> session_;
  std::vector<Tensor> out_;
};

TEST_F(ResourceVariableTest, AssignReadAddSubtract) {
  Handle("v");
  Op("assign", "AssignVariableOp", {"v", b_.Const("init", Tensor::FromVector<float>({1, 2, 3}))});
  Op("add", "AssignAddVariableOp", {"v", b_.Const("ten", Tensor::FromVector<float>({10, 10, 10}))});
  Op("sub", "AssignSubVariableOp", {"v", b_.Const("one", Tensor::FromVector<float>({1, 1, 1}))});
  Op("read", "ReadVariableOp", {"v"});
  b_.Node("initialized", "VarIsInitializedOp", {"v"});
  b_.Node("shape", "VariableShape", {"v"});
  Start();
  ASSERT_TRUE(Run({"initialized"}).ok());
  EXPECT_FALSE(out_[0].data<bool>()[0]);
  ASSERT_TRUE(Run({}, {"assign"}).ok());
  ASSERT_TRUE(Run({"initialized", "read", "shape"}).ok());
  EXPECT_TRUE(out_[0].data<bool>()[0]);
  EXPECT_EQ(Floats(1), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(out_[2].dtype(), DT_INT32);
  EXPECT_EQ(out_[2].data<int32_t>()[0], 3);
  const Tensor before = out_[1];
  ASSERT_TRUE(Run({}, {"add"}).ok());
  ASSERT_TRUE(Run({}, {"sub"}).ok());
  ASSERT_TRUE(Run({"read"}).ok());
  EXPECT_EQ(Floats(0), (std::vector<float>{10, 11, 12}));
  // The value read before the updates is unchanged (copy-on-write).
  EXPECT_EQ(std::vector<float>(before.data<float>(), before.data<float>() + 3), (std::vector<float>{1, 2, 3}));
}

// Static shapes trust a VarHandleOp's declared shape (ReadVariableOp's
// output has it), so no value outside it may get in: a graph that assigns one
// is refused when it is built, and a value known only at run time is refused
// by the kernel.
TEST_F(ResourceVariableTest, AssignRefusesAValueOutsideTheDeclaredShape) {
  TensorShapeProto declared;
  declared.add_dim()->set_size(-1);
  declared.add_dim()->set_size(2);
  b_.Node("v", "VarHandleOp", {},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(declared)}, {"container", MakeAttr(container_)}});
  TensorShapeProto any;
  any.set_unknown_rank(true);
  b_.Node("value", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(any)}});
  Op("assign", "AssignVariableOp", {"v", "value"});
  Op("read", "ReadVariableOp", {"v"});
  Start();
  auto assign = [&](Tensor value) {
    return session_->Run({{"value", std::move(value)}}, {}, {"assign"}, &out_);
  };
  ASSERT_TRUE(assign(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}))).ok());
  absl::Status s = assign(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("resource variable 'v'"));
  EXPECT_THAT(s.message(), HasSubstr("a value of shape [2,3] does not fit the shape [?,2] its VarHandleOp declares"));
  ASSERT_TRUE(Run({"read"}).ok());
  EXPECT_EQ(out_[0].shape(), TensorShape({3, 2}));  // the old value stays

  GraphDefBuilder static_mismatch;
  static_mismatch.Node("w", "VarHandleOp", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(declared)}});
  static_mismatch.Node("assign_w", "AssignVariableOp",
                       {"w", static_mismatch.Const("three", Tensor::FromVector<float>({1, 2, 3}))},
                       {{"dtype", MakeAttr(DT_FLOAT)}});
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok());
  s = (*session)->Create(static_mismatch.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("assign_w"));
  EXPECT_THAT(s.message(), HasSubstr("does not fit the variable's declared shape [?,2]"));
}

// Two handles of one shared_name may declare different shapes; each read
// checks the value against its own handle's, which its static shape trusts.
TEST_F(ResourceVariableTest, AReadRefusesAValueOutsideItsHandlesDeclaredShape) {
  TensorShapeProto open, three;
  open.add_dim()->set_size(-1);
  three.add_dim()->set_size(3);
  for (auto [name, shape] : {std::pair<const char*, TensorShapeProto*>{"wide", &open}, {"narrow", &three}}) {
    b_.Node(name, "VarHandleOp", {},
            {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(*shape)}, {"shared_name", MakeAttr("w")},
             {"container", MakeAttr(container_)}});
  }
  Op("assign", "AssignVariableOp", {"wide", b_.Const("five", Tensor::FromVector<float>({1, 2, 3, 4, 5}))});
  Op("read_wide", "ReadVariableOp", {"wide"});
  Op("read_narrow", "ReadVariableOp", {"narrow"});
  b_.Node("shape_narrow", "VariableShape", {"narrow"});
  b_.Node("gather_narrow", "ResourceGather", {"narrow", b_.Const("rows", Tensor::FromVector<int32_t>({0}))},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"Tindices", MakeAttr(DT_INT32)}});
  Start();
  ASSERT_TRUE(Run({}, {"assign"}).ok());
  ASSERT_TRUE(Run({"read_wide"}).ok());
  EXPECT_EQ(out_[0].NumElements(), 5);
  for (const char* read : {"read_narrow", "shape_narrow", "gather_narrow"}) {
    absl::Status s = Run({read});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << read;
    EXPECT_THAT(s.message(), HasSubstr("a value of shape [5] does not fit the shape [3] its VarHandleOp declares"))
        << read;
  }
}

TEST_F(ResourceVariableTest, TwoHandlesOfOneSharedNameShareTheVariable) {
  b_.Node("a", "VarHandleOp", {},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({}))}, {"shared_name", MakeAttr("w")},
           {"container", MakeAttr(container_)}});
  b_.Node("b", "VarHandleOp", {},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({}))}, {"shared_name", MakeAttr("w")},
           {"container", MakeAttr(container_)}});
  Op("assign", "AssignVariableOp", {"a", b_.Const("seven", Tensor::Scalar<float>(7))});
  Op("read", "ReadVariableOp", {"b"});
  Start();
  ASSERT_TRUE(Run({}, {"assign"}).ok());
  ASSERT_TRUE(Run({"read"}).ok());
  EXPECT_EQ(Floats(0), (std::vector<float>{7}));
}

TEST_F(ResourceVariableTest, GatherRows) {
  Handle("v");
  Tensor init = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Op("assign", "AssignVariableOp", {"v", b_.Const("init", init)});
  b_.Node("gather", "ResourceGather", {"v", b_.Const("idx", Tensor::FromVector<int64_t>({2, 0}))},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"Tindices", MakeAttr(DT_INT64)}});
  b_.Node("bad", "ResourceGather", {"v", b_.Const("bad_idx", Tensor::FromVector<int32_t>({3}))},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"Tindices", MakeAttr(DT_INT32)}});
  Start();
  ASSERT_TRUE(Run({}, {"assign"}).ok());
  ASSERT_TRUE(Run({"gather"}).ok());
  EXPECT_EQ(out_[0].shape(), TensorShape({2, 2}));
  EXPECT_EQ(Floats(0), (std::vector<float>{5, 6, 1, 2}));
  absl::Status s = Run({"bad"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("bad"));
}

TEST_F(ResourceVariableTest, ReadingAnUninitializedOrDestroyedVariableNamesIt) {
  Handle("weights");
  Op("read", "ReadVariableOp", {"weights"});
  Op("assign", "AssignVariableOp", {"weights", b_.Const("one", Tensor::Scalar<float>(1))});
  b_.Node("destroy", "DestroyResourceOp", {"weights"});
  b_.Node("destroy_strict", "DestroyResourceOp", {"weights"}, {{"ignore_lookup_error", MakeAttr(false)}});
  Start();
  absl::Status s = Run({"read"});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("weights"));
  ASSERT_TRUE(Run({}, {"assign"}).ok());
  ASSERT_TRUE(Run({"read"}).ok());
  ASSERT_TRUE(Run({}, {"destroy"}).ok());
  s = Run({"read"});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  ASSERT_TRUE(Run({}, {"destroy"}).ok());  // ignore_lookup_error
  EXPECT_EQ(Run({}, {"destroy_strict"}).code(), absl::StatusCode::kNotFound);
}

TEST_F(ResourceVariableTest, DtypeAndShapeMismatchesNameTheNode) {
  Handle("v");
  Op("assign", "AssignVariableOp", {"v", b_.Const("init", Tensor::FromVector<float>({1, 2}))});
  Op("read_as_double", "ReadVariableOp", {"v"}, DT_DOUBLE);
  Op("add_wrong_shape", "AssignAddVariableOp", {"v", b_.Const("three", Tensor::FromVector<float>({1, 2, 3}))});
  b_.Node("assign_validated", "AssignVariableOp", {"v", b_.Const("other", Tensor::FromVector<float>({1, 2, 3}))},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"validate_shape", MakeAttr(true)}});
  b_.Node("apply_wrong_type", "ResourceApplyGradientDescent",
          {"v", b_.Const("lr", Tensor::Scalar<double>(0.1)), b_.Const("g", Tensor::FromVector<double>({1, 1}))},
          {{"T", MakeAttr(DT_DOUBLE)}});
  Start();
  ASSERT_TRUE(Run({}, {"assign"}).ok());
  for (const char* node : {"read_as_double", "add_wrong_shape", "assign_validated", "apply_wrong_type"}) {
    absl::Status s = Run({}, {node});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << node << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(node));
  }
}

TEST_F(ResourceVariableTest, ApplyOnAnUninitializedVariableIsAFailedPrecondition) {
  Handle("v");
  b_.Node("apply", "ResourceApplyGradientDescent",
          {"v", b_.Const("lr", Tensor::Scalar<float>(0.1f)), b_.Const("g", Tensor::FromVector<float>({1}))},
          {{"T", MakeAttr(DT_FLOAT)}});
  Start();
  absl::Status s = Run({}, {"apply"});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("v"));
}

// Our variables always copy on write, so DisableCopyOnRead changes nothing:
// a value read before an update keeps its value after it; a handle to no
// variable yet is fine; a non-handle input is refused when the graph is built.
TEST_F(ResourceVariableTest, DisableCopyOnReadIsANoOp) {
  Handle("v");
  b_.Node("disable", "DisableCopyOnRead", {"v"});
  Op("assign", "AssignVariableOp", {"v", b_.Const("init", Tensor::FromVector<float>({1, 2}))});
  Op("add", "AssignAddVariableOp", {"v", b_.Const("one", Tensor::FromVector<float>({1, 1}))});
  Op("read", "ReadVariableOp", {"v"});
  b_.Node("scatter", "ResourceScatterAdd",
          {"v", b_.Const("row", Tensor::FromVector<int32_t>({1})), b_.Const("ten", Tensor::FromVector<float>({10}))},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"Tindices", MakeAttr(DT_INT32)}});
  Start();
  ASSERT_TRUE(Run({}, {"disable"}).ok());
  ASSERT_TRUE(Run({}, {"assign"}).ok());
  ASSERT_TRUE(Run({}, {"disable"}).ok());
  ASSERT_TRUE(Run({"read"}).ok());
  const Tensor before = out_[0];
  ASSERT_TRUE(Run({}, {"add"}).ok());
  ASSERT_TRUE(Run({}, {"scatter"}).ok());
  ASSERT_TRUE(Run({"read"}).ok());
  EXPECT_EQ(Floats(0), (std::vector<float>{2, 13}));
  EXPECT_EQ(std::vector<float>(before.data<float>(), before.data<float>() + 2), (std::vector<float>{1, 2}));
}

// d(sum(read * c))/d(handle) = c, through ReadVariableOp's pass-through
// gradient; d(sum(gather(v, [2, 0, 2])))/d(handle) counts each row's uses.
TEST_F(ResourceVariableTest, GradientsReachTheHandle) {
  Handle("v");
  Op("assign", "AssignVariableOp",
     {"v", b_.Const("init", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})))});
  Op("read", "ReadVariableOp", {"v"});
  b_.Node("gather", "ResourceGather", {"v", b_.Const("idx", Tensor::FromVector<int32_t>({2, 0, 2}))},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"Tindices", MakeAttr(DT_INT32)}});
  auto graph = GraphFromGraphDef(b_.graph());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Graph* g = graph->get();
  Output handle{g->FindNode("v"), 0};
  std::vector<Gradient> read_grads, gather_grads;
  ASSERT_TRUE(AddSymbolicGradients(g, {Output{g->FindNode("read"), 0}}, {handle}, {}, &read_grads, "gr").ok());
  ASSERT_TRUE(AddSymbolicGradients(g, {Output{g->FindNode("gather"), 0}}, {handle}, {}, &gather_grads, "gg").ok());
  ASSERT_TRUE(gather_grads[0].is_sparse);
  GraphBuilder builder(g, "dense");
  const std::string read_grad = DenseGradient(&builder, read_grads[0]).name();
  const std::string gather_grad = DenseGradient(&builder, gather_grads[0]).name();
  ASSERT_TRUE(builder.ok()) << builder.status();
  GraphDef def;
  g->ToGraphDef(&def);
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok());
  session_ = std::move(session).value();
  ASSERT_TRUE(session_->Create(def).ok());
  ASSERT_TRUE(Run({}, {"assign"}).ok());
  absl::Status s = Run({read_grad, gather_grad});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Floats(0), (std::vector<float>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(out_[1].shape(), TensorShape({3, 2}));
  EXPECT_EQ(Floats(1), (std::vector<float>{1, 1, 0, 0, 2, 2}));
}

}  // namespace
}  // namespace sluice
