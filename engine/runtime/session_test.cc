// Session behaviour: concurrent steps on shared variables, the feed/fetch
// rewrite and pruning of whitepaper Figure 5, CSE, containers shared by
// sessions and cleared by Reset, the executor cache, and user errors.
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {

// Counts kernel constructions, to observe the executor cache.
std::atomic<int> g_counting_kernels_built{0};
REGISTER_OP("TestCountingIdentity").Input("x: T").Output("y: T").Attr("T: type").SetShapeFn(shape_fns::Unchanged);
class TestCountingIdentityOp : public OpKernel {
 public:
  explicit TestCountingIdentityOp(OpKernelConstruction* ctx) : OpKernel(ctx) { ++g_counting_kernels_built; }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
};
REGISTER_KERNEL_BUILDER(Name("TestCountingIdentity").Device(kDeviceCpu), TestCountingIdentityOp);

// Outputs a float reference to a tensor that holds int32: what a variable
// written behind the graph's type checks would look like to its consumers.
REGISTER_OP("TestMistypedRef").Output("ref: Ref(float)").SetIsStateful();
class TestMistypedRefOp : public OpKernel {
 public:
  explicit TestMistypedRefOp(OpKernelConstruction* ctx) : OpKernel(ctx), value_(Tensor::FromVector<int32_t>({1, 2})) {}
  void Compute(OpKernelContext* ctx) override { ctx->set_output_ref(0, &mu_, &value_, nullptr); }

 private:
  absl::Mutex mu_;
  Tensor value_;
};
REGISTER_KERNEL_BUILDER(Name("TestMistypedRef").Device(kDeviceCpu), TestMistypedRefOp);

namespace {

std::unique_ptr<Session> MakeSession(const GraphDef& graph, SessionOptions options = {}) {
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  absl::Status s = (*session)->Create(graph);
  EXPECT_TRUE(s.ok()) << s;
  return std::move(session).value();
}

std::set<std::string> ExecutedNodes(const RunMetadata& md) {
  std::set<std::string> names;
  for (const NodeExecStats& s : md.step_stats) names.insert(s.node_name);
  return names;
}

TEST(Session, ConcurrentAssignAddFromFourThreadsLosesNothing) {
  GraphDefBuilder b;
  std::string v = b.Variable("counter", DT_FLOAT, TensorShape({}), "concurrent_test");
  std::string init = b.Assign("init", v, b.Const("zero", Tensor::Scalar<float>(0)), DT_FLOAT);
  std::string add = b.AssignAdd("add", v, b.Const("one", Tensor::Scalar<float>(1)), DT_FLOAT);
  std::string read = b.Identity("read", v, DT_FLOAT);
  auto session = MakeSession(b.graph());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {init}, &out).ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<Tensor> unused;
      for (int i = 0; i < 1000; ++i) {
        if (!session->Run({}, {}, {add}, &unused).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(session->Run({}, {read}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 4000.0f);
  Session::Reset({"concurrent_test"});
}

// Whitepaper Figure 5: with feed {b} and fetch {f:0}, d and e never run.
TEST(Session, Figure5PartialExecution) {
  GraphDefBuilder b;
  std::string a = b.Const("a", Tensor::Scalar<float>(1));
  std::string bb = b.Binary("Add", "b", a, a, DT_FLOAT);
  std::string c = b.Binary("Mul", "c", bb, bb, DT_FLOAT);
  std::string d = b.Binary("Add", "d", bb, a, DT_FLOAT);
  std::string e = b.Binary("Mul", "e", d, d, DT_FLOAT);
  std::string f = b.Binary("Add", "f", c, c, DT_FLOAT);
  (void)e;
  // Which nodes run is the point here: a, b (and c, f) are not folded away.
  SessionOptions no_folding;
  no_folding.enable_constant_folding = false;
  auto session = MakeSession(b.graph(), no_folding);
  RunOptions options;
  options.collect_step_stats = true;
  RunMetadata md;
  std::vector<Tensor> out;
  absl::Status s = session->Run(options, {{"b", Tensor::Scalar<float>(3)}}, {"f:0"}, {}, &out, &md);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<float>(), 18.0f);  // f = 2 * b * b with b fed as 3
  std::set<std::string> ran = ExecutedNodes(md);
  EXPECT_EQ(ran.count("d"), 0u);
  EXPECT_EQ(ran.count("e"), 0u);
  EXPECT_EQ(ran.count("a"), 0u);
  EXPECT_EQ(ran.count("b"), 0u);
  EXPECT_EQ(ran.count("c"), 1u);
  EXPECT_EQ(ran.count("f"), 1u);
  // Without the feed, b is computed from a and d, e still do not run.
  md = RunMetadata();
  ASSERT_TRUE(session->Run(options, {}, {"f:0"}, {}, &out, &md).ok());
  EXPECT_EQ(out[0].scalar<float>(), 8.0f);
  ran = ExecutedNodes(md);
  EXPECT_EQ(ran.count("a"), 1u);
  EXPECT_EQ(ran.count("b"), 1u);
  EXPECT_EQ(ran.count("d"), 0u);
  EXPECT_EQ(ran.count("e"), 0u);
}

TEST(Session, CseMergesDuplicateSubgraphs) {
  GraphDefBuilder b;
  std::string x = b.Placeholder("x", DT_FLOAT);
  std::string y = b.Placeholder("y", DT_FLOAT);
  std::string s1 = b.Binary("Add", "sum1", x, y, DT_FLOAT);
  std::string p1 = b.Binary("Mul", "prod1", s1, y, DT_FLOAT);
  std::string s2 = b.Binary("Add", "sum2", x, y, DT_FLOAT);
  std::string p2 = b.Binary("Mul", "prod2", s2, y, DT_FLOAT);
  std::string out_node = b.Binary("Add", "out", p1, p2, DT_FLOAT);
  std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Tensor::Scalar<float>(2)}, {"y", Tensor::Scalar<float>(5)}};
  RunMetadata with_cse, without_cse;
  std::vector<Tensor> a, c;
  {
    auto session = MakeSession(b.graph());
    ASSERT_TRUE(session->Run(RunOptions(), feeds, {out_node}, {}, &a, &with_cse).ok());
  }
  {
    SessionOptions options;
    options.enable_cse = false;
    auto session = MakeSession(b.graph(), options);
    ASSERT_TRUE(session->Run(RunOptions(), feeds, {out_node}, {}, &c, &without_cse).ok());
  }
  EXPECT_EQ(a[0].scalar<float>(), 70.0f);
  EXPECT_EQ(c[0].scalar<float>(), 70.0f);
  EXPECT_EQ(without_cse.executed_graph_nodes - with_cse.executed_graph_nodes, 2);
}

TEST(Session, ContainerIsSharedBySessionsAndClearedByReset) {
  GraphDefBuilder b;
  std::string v = b.Variable("shared_v", DT_INT32, TensorShape({2}), "shared_container");
  std::string init = b.Assign("init", v, b.Const("val", Tensor::FromVector<int32_t>({7, 9})), DT_INT32);
  std::string read = b.Identity("read", v, DT_INT32);
  auto first = MakeSession(b.graph());
  auto second = MakeSession(b.graph());
  std::vector<Tensor> out;
  ASSERT_TRUE(first->Run({}, {}, {init}, &out).ok());
  absl::Status s = second->Run({}, {read}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].data<int32_t>()[0], 7);
  EXPECT_EQ(out[0].data<int32_t>()[1], 9);
  Session::Reset({"shared_container"});
  s = second->Run({}, {read}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("uninitialized"), std::string::npos) << s;
  EXPECT_NE(s.message().find("shared_v"), std::string::npos) << s;
  // Re-initializing through the first session makes it visible again.
  ASSERT_TRUE(first->Run({}, {}, {init}, &out).ok());
  ASSERT_TRUE(second->Run({}, {read}, {}, &out).ok());
  Session::Reset({"shared_container"});
}

TEST(Session, IsVariableInitializedFollowsInitAndReset) {
  GraphDefBuilder b;
  std::string v = b.Variable("probe_v", DT_FLOAT, TensorShape({}), "probe_container");
  std::string init = b.Assign("init", v, b.Const("val", Tensor::Scalar<float>(3)), DT_FLOAT);
  std::string ready = b.Node("ready", "IsVariableInitialized", {v}, {{"dtype", MakeAttr(DT_FLOAT)}});
  auto session = MakeSession(b.graph());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {ready}, {}, &out).ok());
  EXPECT_FALSE(out[0].scalar<bool>());
  ASSERT_TRUE(session->Run({}, {}, {init}, &out).ok());
  ASSERT_TRUE(session->Run({}, {ready}, {}, &out).ok());
  EXPECT_TRUE(out[0].scalar<bool>());
  Session::Reset({"probe_container"});
  ASSERT_TRUE(session->Run({}, {ready}, {}, &out).ok());
  EXPECT_FALSE(out[0].scalar<bool>());
}

// Issue 22, class 9: two VariableV2 nodes share one variable through
// shared_name but declare float and int32. The second to run fails, naming
// itself and attr 'dtype', instead of a kernel CHECKing the tensor's dtype.
TEST(Session, SharedVariableWithAnotherDtypeIsAnError) {
  GraphDefBuilder b;
  std::string vf = b.Variable("vf", DT_FLOAT, TensorShape({2}), "dtype_clash");
  std::string vi = b.Variable("vi", DT_INT32, TensorShape({2}), "dtype_clash");
  for (const std::string& v : {vf, vi}) (*b.FindNode(v)->mutable_attr())["shared_name"] = MakeAttr("w");
  std::string init_f = b.Assign("init_f", vf, b.Const("f", Tensor::FromVector<float>({1.5f, 2.5f})), DT_FLOAT);
  std::string add_f = b.AssignAdd("add_f", vf, b.Const("df", Tensor::FromVector<float>({1, 1})), DT_FLOAT);
  std::string init_i = b.Assign("init_i", vi, b.Const("i", Tensor::FromVector<int32_t>({7, 9})), DT_INT32);
  std::string add_i = b.AssignAdd("add_i", vi, b.Const("di", Tensor::FromVector<int32_t>({1, 1})), DT_INT32);
  auto session = MakeSession(b.graph());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {init_f}, &out).ok());
  for (const std::string& target : {init_i, add_i}) {
    absl::Status s = session->Run({}, {}, {target}, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("'vi'"), std::string::npos) << s;
    EXPECT_NE(s.message().find("attr 'dtype' is int32"), std::string::npos) << s;
    EXPECT_NE(s.message().find("already exists as float"), std::string::npos) << s;
  }
  // The float variable is untouched and still works.
  ASSERT_TRUE(session->Run({}, {add_f}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 2.5f);
  Session::Reset({"dtype_clash"});
  // Created as int32 first, the float node is the one that fails.
  ASSERT_TRUE(session->Run({}, {}, {init_i}, &out).ok());
  absl::Status s = session->Run({}, {}, {add_f}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("'vf'"), std::string::npos) << s;
  Session::Reset({"dtype_clash"});
}

// The executor checks what a reference input holds against the type its edge
// promises, so no kernel meets a tensor of another dtype behind a Ref.
TEST(Session, ReferenceInputOfAnotherDtypeIsAnError) {
  GraphDefBuilder b;
  std::string ref = b.Node("mistyped", "TestMistypedRef");
  std::string add = b.AssignAdd("add", ref, b.Const("d", Tensor::FromVector<float>({1, 1})), DT_FLOAT);
  std::string read = b.Identity("read", ref, DT_FLOAT);
  auto session = MakeSession(b.graph());
  std::vector<Tensor> out;
  for (const std::string& fetch : {add, read}) {
    absl::Status s = session->Run({}, {fetch}, {}, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(absl::StrCat("'", fetch, "'")), std::string::npos) << s;
    EXPECT_NE(s.message().find("holds int32 but float is expected"), std::string::npos) << s;
  }
}

TEST(Session, ResetOfAnotherContainerLeavesVariablesAlone) {
  GraphDefBuilder b;
  std::string v = b.Variable("kept", DT_FLOAT, TensorShape({}), "kept_container");
  std::string init = b.Assign("init", v, b.Const("val", Tensor::Scalar<float>(2.5f)), DT_FLOAT);
  std::string read = b.Identity("read", v, DT_FLOAT);
  auto session = MakeSession(b.graph());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {init}, &out).ok());
  Session::Reset({"some_other_container"});
  ASSERT_TRUE(session->Run({}, {read}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 2.5f);
  Session::Reset({"kept_container"});
}

TEST(Session, ExecutorIsCachedPerSignature) {
  GraphDefBuilder b;
  std::string x = b.Placeholder("x", DT_FLOAT);
  std::string y = b.Node("y", "TestCountingIdentity", {x}, {{"T", MakeAttr(DT_FLOAT)}});
  auto session = MakeSession(b.graph());
  const int before = g_counting_kernels_built.load();
  std::vector<Tensor> out;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(session->Run({{"x", Tensor::Scalar<float>(i)}}, {y}, {}, &out).ok());
    EXPECT_EQ(out[0].scalar<float>(), static_cast<float>(i));
  }
  EXPECT_EQ(g_counting_kernels_built.load() - before, 1);
  // A new signature builds a new executor.
  ASSERT_TRUE(session->Run({{"x", Tensor::Scalar<float>(1)}}, {y, x}, {}, &out).ok());
  EXPECT_EQ(g_counting_kernels_built.load() - before, 2);
  // Extend invalidates the cache.
  GraphDefBuilder more;
  more.Identity("z", y, DT_FLOAT);
  ASSERT_TRUE(session->Extend(more.graph()).ok());
  ASSERT_TRUE(session->Run({{"x", Tensor::Scalar<float>(4)}}, {"z"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 4.0f);
  EXPECT_EQ(g_counting_kernels_built.load() - before, 3);
}

TEST(Session, ConcurrentRunsWithDifferentSignatures) {
  GraphDefBuilder b;
  std::string x = b.Placeholder("x", DT_INT32);
  std::string sq = b.Binary("Mul", "sq", x, x, DT_INT32);
  std::string dbl = b.Binary("Add", "dbl", x, x, DT_INT32);
  auto session = MakeSession(b.graph());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Tensor> out;
      for (int i = 0; i < 200; ++i) {
        const int v = t * 1000 + i;
        const bool square = (i + t) % 2 == 0;
        absl::Status s = session->Run({{"x", Tensor::Scalar<int32_t>(v)}}, {square ? sq : dbl}, {}, &out);
        if (!s.ok() || out[0].scalar<int32_t>() != (square ? v * v : 2 * v)) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Session, PlaceholderWithDefaultGivesItsDefaultUnlessFed) {
  GraphDefBuilder b;
  TensorShapeProto any_length;
  any_length.add_dim()->set_size(-1);
  std::string d = b.Const("default", Tensor::FromVector<float>({1, 2}));
  std::string x = b.Node("x", "PlaceholderWithDefault", {d}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(any_length)}});
  std::string y = b.Binary("Add", "y", x, x, DT_FLOAT);
  auto session = MakeSession(b.graph());
  std::vector<Tensor> out;
  absl::Status s = session->Run({}, {y}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(out[0].NumElements(), 2);
  EXPECT_EQ(out[0].data<float>()[1], 4.0f);
  s = session->Run({{"x", Tensor::FromVector<float>({5, 6, 7})}}, {y}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(out[0].NumElements(), 3);
  EXPECT_EQ(out[0].data<float>()[2], 14.0f);
  // A fed value must have the declared shape.
  s = session->Run({{"x", Tensor::Scalar<float>(1)}}, {y}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("[?]"), std::string::npos) << s;
}

TEST(Session, UserErrorsAreClear) {
  GraphDefBuilder b;
  std::string x = b.Node("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({2}))}});
  std::string y = b.Binary("Add", "y", x, x, DT_FLOAT);
  auto session = MakeSession(b.graph());
  std::vector<Tensor> out;
  absl::Status s = session->Run({}, {y}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("placeholder 'x'"), std::string::npos) << s;
  s = session->Run({{"x", Tensor::Scalar<int32_t>(1)}}, {y}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("type int32"), std::string::npos) << s;
  s = session->Run({{"x", Tensor::FromVector<float>({1, 2, 3})}}, {y}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("[3]"), std::string::npos) << s;
  s = session->Run({{"xx", Tensor::Scalar<float>(1)}}, {y}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("did you mean 'x'"), std::string::npos) << s;
  s = session->Run({}, {"y:1"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = session->Run({}, {}, {"nope"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  s = session->Run({}, {}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = session->Run({{"x", Tensor::FromVector<float>({1, 2})}}, {y}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].data<float>()[1], 4.0f);
}

TEST(Session, LifecycleErrors) {
  GraphDefBuilder b;
  b.Const("c", Tensor::Scalar<float>(1));
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> out;
  EXPECT_EQ((*session)->Run({}, {"c"}, {}, &out).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  EXPECT_EQ((*session)->Create(b.graph()).code(), absl::StatusCode::kFailedPrecondition);
  // Extending with a duplicate name fails and leaves the graph usable.
  EXPECT_EQ((*session)->Extend(b.graph()).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*session)->Run({}, {"c"}, {}, &out).ok());
  ASSERT_TRUE((*session)->Close().ok());
  EXPECT_EQ((*session)->Run({}, {"c"}, {}, &out).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(NewSession(SessionOptions{-1, true}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Session, MatMulThroughTheSession) {
  GraphDefBuilder m;
  Tensor am(DT_FLOAT, TensorShape({2, 3}));
  Tensor bm(DT_FLOAT, TensorShape({3, 2}));
  for (int i = 0; i < 6; ++i) {
    am.data<float>()[i] = static_cast<float>(i + 1);
    bm.data<float>()[i] = static_cast<float>(6 - i);
  }
  std::string ma = m.Const("ma", am);
  std::string mb = m.Const("mb", bm);
  std::string prod = m.Node("prod", "MatMul", {ma, mb}, {{"T", MakeAttr(DT_FLOAT)}});
  std::string prod_t = m.Node("prod_t", "MatMul", {ma, ma},
                              {{"T", MakeAttr(DT_FLOAT)}, {"transpose_b", MakeAttr(true)}});
  auto session = MakeSession(m.graph());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {prod, prod_t}, {}, &out).ok());
  ASSERT_EQ(out[0].shape(), TensorShape({2, 2}));
  // [[1,2,3],[4,5,6]] x [[6,5],[4,3],[2,1]] = [[20,14],[56,41]]
  EXPECT_EQ(out[0].data<float>()[0], 20.0f);
  EXPECT_EQ(out[0].data<float>()[1], 14.0f);
  EXPECT_EQ(out[0].data<float>()[2], 56.0f);
  EXPECT_EQ(out[0].data<float>()[3], 41.0f);
  ASSERT_EQ(out[1].shape(), TensorShape({2, 2}));
  // A A^T = [[14,32],[32,77]]
  EXPECT_EQ(out[1].data<float>()[1], 32.0f);
  EXPECT_EQ(out[1].data<float>()[3], 77.0f);
}

}  // namespace
}  // namespace sluice
