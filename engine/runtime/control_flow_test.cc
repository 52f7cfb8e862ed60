// While loops built only from Enter/Merge/Switch/LoopCond/NextIteration/Exit:
// sum of 1..N, a nested loop, deadness through a cond, and iteration overlap
// bounded by parallel_iterations; ControlTrigger after a dead branch; Assert.
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {

// A test-only op that forwards its input after sleeping `ms` milliseconds on
// an inter-op thread, to make overlapping iterations visible.
REGISTER_OP("TestSlowIdentity")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: type")
    .Attr("ms: int = 5")
    .SetShapeFn(shape_fns::Unchanged);

class TestSlowIdentityOp : public OpKernel {
 public:
  explicit TestSlowIdentityOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, ctx->GetAttr("ms", &ms_)); }
  void Compute(OpKernelContext* ctx) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    ctx->set_output(0, ctx->input(0));
  }

 private:
  int64_t ms_ = 5;
};
REGISTER_KERNEL_BUILDER(Name("TestSlowIdentity").Device(kDeviceCpu), TestSlowIdentityOp);

namespace {

// s = 0; for (i = 1; i < limit; ++i) s += body(i); returns the name of s's Exit.
// `body_op` is applied to i before the addition ("" for none).
struct LoopNames {
  std::string sum;
};

LoopNames SumLoop(GraphDefBuilder* b, const std::string& p, const std::string& limit, const std::string& frame,
                  int parallel_iterations, const std::string& body_op = "", const std::string& addend = "",
                  const std::string& seed_one = "") {
  // `limit` and the constants enter as loop invariants.
  std::string one = seed_one.empty() ? b->Const(p + "one", Tensor::Scalar<int32_t>(1)) : seed_one;
  std::string zero = b->Const(p + "zero", Tensor::Scalar<int32_t>(0));
  if (!seed_one.empty()) {
    // Constants inside an enclosing loop need an input from that frame.
    b->FindNode(zero)->add_input("^" + seed_one);
  }
  std::string limit_e = b->Enter(p + "limit_e", limit, DT_INT32, frame, true, parallel_iterations);
  std::string one_e = b->Enter(p + "one_e", one, DT_INT32, frame, true, parallel_iterations);
  std::string i_e = b->Enter(p + "i_e", one, DT_INT32, frame, false, parallel_iterations);
  std::string s_e = b->Enter(p + "s_e", zero, DT_INT32, frame, false, parallel_iterations);
  std::string addend_e;
  if (!addend.empty()) addend_e = b->Enter(p + "addend_e", addend, DT_INT32, frame, true, parallel_iterations);
  std::string i_m = b->Merge(p + "i_m", {i_e, p + "i_next"}, DT_INT32);
  std::string s_m = b->Merge(p + "s_m", {s_e, p + "s_next"}, DT_INT32);
  std::string less = b->Binary("Less", p + "less", i_m, limit_e, DT_INT32);
  std::string cond = b->LoopCond(p + "cond", less);
  std::string i_sw = b->Switch(p + "i_sw", i_m, cond, DT_INT32);
  std::string s_sw = b->Switch(p + "s_sw", s_m, cond, DT_INT32);
  b->Exit(p + "i_exit", i_sw + ":0", DT_INT32);
  std::string s_exit = b->Exit(p + "s_exit", s_sw + ":0", DT_INT32);
  std::string i_body = b->Identity(p + "i_body", i_sw + ":1", DT_INT32);
  std::string s_body = b->Identity(p + "s_body", s_sw + ":1", DT_INT32);
  std::string term = addend.empty() ? i_body : addend_e;
  if (!body_op.empty()) term = b->Node(p + "slow", body_op, {term}, {{"T", MakeAttr(DT_INT32)}});
  std::string i_new = b->Binary("Add", p + "i_new", i_body, one_e, DT_INT32);
  std::string s_new = b->Binary("Add", p + "s_new", s_body, term, DT_INT32);
  b->NextIteration(p + "i_next", i_new, DT_INT32);
  b->NextIteration(p + "s_next", s_new, DT_INT32);
  return LoopNames{s_exit};
}

int32_t RunScalar(const GraphDef& graph, const std::string& fetch, RunMetadata* metadata = nullptr,
                  int inter_op_threads = 2) {
  SessionOptions options;
  options.inter_op_threads = inter_op_threads;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok());
  absl::Status s = (*session)->Create(graph);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<Tensor> out;
  RunOptions run_options;
  run_options.collect_step_stats = metadata != nullptr;
  s = (*session)->Run(run_options, {}, {fetch}, {}, &out, metadata);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok() || out.size() != 1) return -1;
  return out[0].scalar<int32_t>();
}

// A tensor inside a loop has a value per iteration: feeding or fetching it
// is an InvalidArgument naming the tensor and the loop, while the Exit's
// output and the loop's inputs are fine.
TEST(LoopFetches, ATensorInsideALoopCannotBeFedOrFetched) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(4));
  LoopNames loop = SumLoop(&b, "", limit, "sum_loop", 10);
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  std::vector<Tensor> out;
  for (const char* inside : {"s_m", "i_body", "i_e", "s_sw:1"}) {
    absl::Status s = (*session)->Run({}, {inside}, {}, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << inside << ": " << s;
    EXPECT_THAT(std::string(s.message()),
                ::testing::HasSubstr(absl::StrCat("cannot fetch '", inside, "': it is inside the while loop 'sum_loop'")));
  }
  absl::Status s = (*session)->Run({{"s_body", Tensor::Scalar<int32_t>(1)}}, {loop.sum}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("cannot feed 's_body'"));
  s = (*session)->Run({{"limit", Tensor::Scalar<int32_t>(3)}}, {loop.sum, "i_exit"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<int32_t>(), 3);  // 1 + 2
  EXPECT_EQ(out[1].scalar<int32_t>(), 3);
}

class SumLoopTest : public ::testing::TestWithParam<int> {};

TEST_P(SumLoopTest, SumsOneToN) {
  const int n = GetParam();
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(n + 1));
  LoopNames loop = SumLoop(&b, "", limit, "sum_loop", 10);
  EXPECT_EQ(RunScalar(b.graph(), loop.sum), n * (n + 1) / 2);
}

TEST_P(SumLoopTest, SumsOneToNWithOneIterationAtATime) {
  const int n = GetParam();
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(n + 1));
  LoopNames loop = SumLoop(&b, "", limit, "sum_loop", 1);
  EXPECT_EQ(RunScalar(b.graph(), loop.sum), n * (n + 1) / 2);
}

// Outer loop over i = 1..n; the inner loop adds i twice; total n(n+1).
// Returns the outer sum's Exit.
std::string NestedSumLoop(GraphDefBuilder* b, int n) {
  std::string limit = b->Const("limit", Tensor::Scalar<int32_t>(n + 1));
  std::string three = b->Const("three", Tensor::Scalar<int32_t>(3));
  // Outer loop, written out so its body can host the inner loop.
  std::string one = b->Const("one", Tensor::Scalar<int32_t>(1));
  std::string zero = b->Const("zero", Tensor::Scalar<int32_t>(0));
  std::string limit_e = b->Enter("limit_e", limit, DT_INT32, "outer", true);
  std::string three_e = b->Enter("three_e", three, DT_INT32, "outer", true);
  std::string one_e = b->Enter("one_e", one, DT_INT32, "outer", true);
  std::string i_e = b->Enter("i_e", one, DT_INT32, "outer");
  std::string s_e = b->Enter("s_e", zero, DT_INT32, "outer");
  std::string i_m = b->Merge("i_m", {i_e, "i_next"}, DT_INT32);
  std::string s_m = b->Merge("s_m", {s_e, "s_next"}, DT_INT32);
  std::string cond = b->LoopCond("cond", b->Binary("Less", "less", i_m, limit_e, DT_INT32));
  std::string i_sw = b->Switch("i_sw", i_m, cond, DT_INT32);
  std::string s_sw = b->Switch("s_sw", s_m, cond, DT_INT32);
  std::string s_exit = b->Exit("s_exit", s_sw + ":0", DT_INT32);
  b->Exit("i_exit", i_sw + ":0", DT_INT32);
  std::string i_body = b->Identity("i_body", i_sw + ":1", DT_INT32);
  std::string s_body = b->Identity("s_body", s_sw + ":1", DT_INT32);
  // Inner loop: j = 1..2, t += i. Its constants hang off i_body (frame "outer").
  std::string inner_one = b->Identity("inner_one", one_e, DT_INT32, {i_body});
  std::string inner_limit = b->Identity("inner_limit", three_e, DT_INT32, {i_body});
  LoopNames inner = SumLoop(b, "in_", inner_limit, "inner", 10, "", i_body, inner_one);
  std::string i_new = b->Binary("Add", "i_new", i_body, one_e, DT_INT32);
  std::string s_new = b->Binary("Add", "s_new", s_body, inner.sum, DT_INT32);
  b->NextIteration("i_next", i_new, DT_INT32);
  b->NextIteration("s_next", s_new, DT_INT32);
  return s_exit;
}

TEST_P(SumLoopTest, NestedLoop) {
  const int n = GetParam();
  GraphDefBuilder b;
  const std::string sum = NestedSumLoop(&b, n);
  EXPECT_EQ(RunScalar(b.graph(), sum), n * (n + 1));
}

// Frames end on whichever thread finishes their last op; an inner frame's
// end and its parent iteration's end racing once crashed one run in about a
// thousand (a parent frame deleted by one thread while another still
// cleaned it up). Many short nested runs make such a race likely to show.
TEST(NestedLoopStress, ManyRunsAgree) {
  for (int n : {1, 2}) {
    GraphDefBuilder b;
    const std::string sum = NestedSumLoop(&b, n);
    for (int run = 0; run < 600; ++run) {
      // A new session each time: its threads start cold, as in the crash.
      ASSERT_EQ(RunScalar(b.graph(), sum), n * (n + 1)) << "run " << run;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(N, SumLoopTest, ::testing::Values(0, 1, 2, 1000));

// Step stats of the slow body op, per iteration: [start, end].
std::vector<std::pair<int64_t, int64_t>> SlowIntervals(const RunMetadata& md) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const NodeExecStats& s : md.step_stats) {
    if (s.op == "TestSlowIdentity") out.push_back({s.start_ns, s.end_ns});
  }
  return out;
}

int MaxConcurrent(std::vector<std::pair<int64_t, int64_t>> intervals) {
  std::vector<std::pair<int64_t, int>> events;
  for (auto [a, b] : intervals) {
    events.push_back({a, +1});
    events.push_back({b, -1});
  }
  std::sort(events.begin(), events.end(), [](auto x, auto y) { return x.first != y.first ? x.first < y.first : x.second < y.second; });
  int cur = 0, best = 0;
  for (auto [t, d] : events) best = std::max(best, cur += d);
  return best;
}

TEST(ParallelIterations, IterationsOverlapWhenAllowed) {
  const int n = 12;
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(n + 1));
  LoopNames loop = SumLoop(&b, "", limit, "loop", 4, "TestSlowIdentity");
  RunMetadata md;
  EXPECT_EQ(RunScalar(b.graph(), loop.sum, &md, 4), n * (n + 1) / 2);
  auto intervals = SlowIntervals(md);
  ASSERT_EQ(intervals.size(), static_cast<size_t>(n));
  EXPECT_GT(MaxConcurrent(intervals), 1) << "no two iterations' bodies ran at the same time";
  EXPECT_LE(MaxConcurrent(intervals), 4);
}

TEST(ParallelIterations, OneIterationAtATimeNeverOverlaps) {
  const int n = 6;
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(n + 1));
  LoopNames loop = SumLoop(&b, "", limit, "loop", 1, "TestSlowIdentity");
  RunMetadata md;
  EXPECT_EQ(RunScalar(b.graph(), loop.sum, &md, 4), n * (n + 1) / 2);
  auto intervals = SlowIntervals(md);
  ASSERT_EQ(intervals.size(), static_cast<size_t>(n));
  EXPECT_EQ(MaxConcurrent(intervals), 1);
}

// A GraphDef's huge parallel_iterations (2^31 - 1: a slot per allowed
// iteration would be 16 GiB) runs as kMaxParallelIterations, with the same result.
TEST(ParallelIterations, AHugeAttrIsBoundedAndTheLoopStillRuns) {
  const int n = 50;
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(n + 1));
  LoopNames loop = SumLoop(&b, "", limit, "loop", 2147483647);
  EXPECT_EQ(RunScalar(b.graph(), loop.sum), n * (n + 1) / 2);
}

// A cond: Switch on a predicate, two branches, Merge. Only one branch runs.
TEST(Cond, OnlyTheTakenBranchRuns) {
  for (bool pred : {false, true}) {
    GraphDefBuilder b;
    std::string x = b.Const("x", Tensor::Scalar<int32_t>(10));
    std::string p = b.Const("p", Tensor::Scalar<bool>(pred));
    std::string sw = b.Switch("sw", x, p, DT_INT32);
    std::string f = b.Binary("Add", "f", sw + ":0", b.Const("c1", Tensor::Scalar<int32_t>(1)), DT_INT32);
    std::string t = b.Binary("Mul", "t", sw + ":1", b.Const("c2", Tensor::Scalar<int32_t>(3)), DT_INT32);
    std::string m = b.Merge("m", {f, t}, DT_INT32);
    RunMetadata md;
    EXPECT_EQ(RunScalar(b.graph(), m, &md), pred ? 30 : 11);
    bool ran_f = false, ran_t = false;
    for (const auto& s : md.step_stats) {
      ran_f |= s.node_name == "f";
      ran_t |= s.node_name == "t";
    }
    EXPECT_EQ(ran_f, !pred);
    EXPECT_EQ(ran_t, pred);
  }
}

TEST(Cond, FetchingADeadTensorIsAnError) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::Scalar<int32_t>(10));
  std::string p = b.Const("p", Tensor::Scalar<bool>(false));
  std::string sw = b.Switch("sw", x, p, DT_INT32);
  std::string t = b.Identity("t", sw + ":1", DT_INT32);
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  std::vector<Tensor> out;
  absl::Status s = (*session)->Run({}, {t}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("dead"), std::string::npos) << s;
}

// A NoOp after the untaken branch of a cond is dead, and so is what waits on
// it; a ControlTrigger there is live, so what waits on it runs.
TEST(Cond, ControlTriggerIsLiveAfterADeadBranch) {
  for (const std::string op : {"NoOp", "ControlTrigger"}) {
    GraphDefBuilder b;
    std::string x = b.Const("x", Tensor::Scalar<int32_t>(10));
    std::string p = b.Const("p", Tensor::Scalar<bool>(false));
    std::string sw = b.Switch("sw", x, p, DT_INT32);
    std::string t = b.Identity("t", sw + ":1", DT_INT32);
    std::string trigger = b.Node("trigger", op, {"^" + t});
    std::string y = b.Identity("y", b.Const("c", Tensor::Scalar<int32_t>(7)), DT_INT32, {trigger});
    auto session = NewSession();
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->Create(b.graph()).ok());
    std::vector<Tensor> out;
    absl::Status s = (*session)->Run({}, {y}, {}, &out);
    if (op == "NoOp") {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      EXPECT_NE(s.message().find("dead"), std::string::npos) << s;
    } else {
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(out[0].data<int32_t>()[0], 7);
    }
  }
}

// The steps of one Run signature reuse the executor's root-frame state. A
// step that fails after a Merge's live input arrived but before the Merge
// ran leaves that value in its slot; in the next step that input is dead,
// and the Merge must not see the old value (it takes its first live input).
TEST(Cond, AFailedStepLeavesNoValueForTheNext) {
  GraphDefBuilder b;
  std::string x = b.Placeholder("x", DT_INT32);
  std::string p = b.Placeholder("p", DT_BOOL);
  std::string ok = b.Placeholder("ok", DT_BOOL);
  std::string sw = b.Switch("sw", x, p, DT_INT32);
  std::string f = b.Binary("Add", "f", sw + ":0", b.Const("c1", Tensor::Scalar<int32_t>(1)), DT_INT32);
  std::string t = b.Binary("Mul", "t", sw + ":1", b.Const("c2", Tensor::Scalar<int32_t>(3)), DT_INT32);
  // Runs after f (dead with it); fails the step when `ok` is false.
  std::string check = b.Node("check", "Assert", {ok, x, "^" + f}, {{"T", MakeAttr(std::vector<DataType>{DT_INT32})}});
  std::string m = b.Merge("m", {f, t}, DT_INT32);
  b.FindNode(m)->add_input("^" + check);
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  for (int step = 0; step < 4; ++step) {
    std::vector<Tensor> out;
    // f runs (10 + step + 1 goes to m's first slot), then check fails.
    absl::Status s = (*session)->Run({{x, Tensor::Scalar<int32_t>(10 + step)}, {p, Tensor::Scalar<bool>(false)},
                                      {ok, Tensor::Scalar<bool>(false)}},
                                     {m}, {}, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    // f is dead now: m takes t's value.
    s = (*session)->Run({{x, Tensor::Scalar<int32_t>(step)}, {p, Tensor::Scalar<bool>(true)},
                         {ok, Tensor::Scalar<bool>(true)}},
                        {m}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(out[0].data<int32_t>()[0], step * 3);
  }
}

// The same for a graph without Merge, whose pending inputs are counted in
// atomics without the frame's lock: a step that fails after one of d's two
// inputs arrived must leave d's count and slot as new for the next step (else
// d runs early, before its second input, or never).
TEST(Cond, AFailedStepLeavesNoCountForTheNextWithoutMerge) {
  GraphDefBuilder b;
  std::string x = b.Placeholder("x", DT_INT32);
  std::string ok = b.Placeholder("ok", DT_BOOL);
  std::string first = b.Node("first", "Identity", {x}, {{"T", MakeAttr(DT_INT32)}});
  // Runs after `first` reached d; fails the step when `ok` is false.
  std::string check =
      b.Node("check", "Assert", {ok, x, "^" + first}, {{"T", MakeAttr(std::vector<DataType>{DT_INT32})}});
  std::string second = b.Node("second", "Identity", {x, "^" + check}, {{"T", MakeAttr(DT_INT32)}});
  std::string d = b.Binary("Add", "d", first, second, DT_INT32);
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  for (int step = 0; step < 4; ++step) {
    std::vector<Tensor> out;
    absl::Status s = (*session)->Run({{x, Tensor::Scalar<int32_t>(100 + step)}, {ok, Tensor::Scalar<bool>(false)}},
                                     {d}, {}, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    s = (*session)->Run({{x, Tensor::Scalar<int32_t>(step)}, {ok, Tensor::Scalar<bool>(true)}}, {d}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].data<int32_t>()[0], 2 * step);
  }
}

// Loop frames reuse iteration states: within a step (a done iteration's
// state serves a later one) and across steps (a deleted frame's states serve
// the next step's frame). A loop whose body holds a cond, with steps that fail
// inside the body after the cond's false branch reached its Merge, between
// steps that take the other branch: each good step sums exactly what it must.
TEST(Loop, ReusedIterationStatesCarryNothingBetweenIterationsOrSteps) {
  for (int parallel : {1, 10}) {
    GraphDefBuilder b;
    std::string limit = b.Placeholder("limit", DT_INT32);
    std::string p = b.Placeholder("p", DT_BOOL);
    std::string ok = b.Placeholder("ok", DT_BOOL);
    std::string one = b.Const("one", Tensor::Scalar<int32_t>(1));
    std::string three = b.Const("three", Tensor::Scalar<int32_t>(3));
    std::string zero = b.Const("zero", Tensor::Scalar<int32_t>(0));
    const std::string frame = "loop";
    std::string limit_e = b.Enter("limit_e", limit, DT_INT32, frame, true, parallel);
    std::string p_e = b.Enter("p_e", p, DT_BOOL, frame, true, parallel);
    std::string ok_e = b.Enter("ok_e", ok, DT_BOOL, frame, true, parallel);
    std::string one_e = b.Enter("one_e", one, DT_INT32, frame, true, parallel);
    std::string three_e = b.Enter("three_e", three, DT_INT32, frame, true, parallel);
    std::string i_e = b.Enter("i_e", one, DT_INT32, frame, false, parallel);
    std::string s_e = b.Enter("s_e", zero, DT_INT32, frame, false, parallel);
    std::string i_m = b.Merge("i_m", {i_e, "i_next"}, DT_INT32);
    std::string s_m = b.Merge("s_m", {s_e, "s_next"}, DT_INT32);
    std::string cond = b.LoopCond("cond", b.Binary("Less", "less", i_m, limit_e, DT_INT32));
    std::string i_sw = b.Switch("i_sw", i_m, cond, DT_INT32);
    std::string s_sw = b.Switch("s_sw", s_m, cond, DT_INT32);
    std::string s_exit = b.Exit("s_exit", s_sw + ":0", DT_INT32);
    b.Exit("i_exit", i_sw + ":0", DT_INT32);
    std::string i_body = b.Identity("i_body", i_sw + ":1", DT_INT32);
    std::string s_body = b.Identity("s_body", s_sw + ":1", DT_INT32);
    // The body's cond: p ? 3 * i : i + 1.
    std::string branch = b.Switch("branch", i_body, p_e, DT_INT32);
    std::string f = b.Binary("Add", "f", branch + ":0", one_e, DT_INT32);
    std::string t = b.Binary("Mul", "t", branch + ":1", three_e, DT_INT32);
    // After f (dead with it); fails the step when `ok` is false.
    std::string check =
        b.Node("check", "Assert", {ok_e, i_body, "^" + f}, {{"T", MakeAttr(std::vector<DataType>{DT_INT32})}});
    std::string m = b.Merge("m", {f, t}, DT_INT32);
    b.FindNode(m)->add_input("^" + check);
    std::string i_new = b.Binary("Add", "i_new", i_body, one_e, DT_INT32);
    std::string s_new = b.Binary("Add", "s_new", s_body, m, DT_INT32);
    b.NextIteration("i_next", i_new, DT_INT32);
    b.NextIteration("s_next", s_new, DT_INT32);
    auto session = NewSession();
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->Create(b.graph()).ok());
    for (int step = 0; step < 6; ++step) {
      const int n = 3 + 7 * step;  // i = 1..n
      std::vector<Tensor> out;
      absl::Status s =
          (*session)->Run({{limit, Tensor::Scalar<int32_t>(n + 1)}, {p, Tensor::Scalar<bool>(false)},
                           {ok, Tensor::Scalar<bool>(false)}},
                          {s_exit}, {}, &out);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      for (bool take_true : {true, false}) {
        s = (*session)->Run({{limit, Tensor::Scalar<int32_t>(n + 1)}, {p, Tensor::Scalar<bool>(take_true)},
                             {ok, Tensor::Scalar<bool>(true)}},
                            {s_exit}, {}, &out);
        ASSERT_TRUE(s.ok()) << s;
        const int sum = n * (n + 1) / 2;
        EXPECT_EQ(out[0].scalar<int32_t>(), take_true ? 3 * sum : sum + n)
            << "parallel_iterations " << parallel << ", step " << step << ", p " << take_true;
      }
    }
  }
}

// Assert: a true condition lets the step finish; a false one fails it with
// InvalidArgument naming the node and summarizing the data tensors.
TEST(Assert, FailsTheStepWithTheDataSummaries) {
  for (bool ok : {true, false}) {
    GraphDefBuilder b;
    std::string cond = b.Const("cond", Tensor::Scalar<bool>(ok));
    Tensor text(DT_STRING, TensorShape({}));
    text.data<tstring>()[0] = "x must be positive, x =";
    std::string msg = b.Const("msg", text);
    std::string values = b.Const("values", Tensor::FromVector<float>({-1, 2, 3, 4}));
    std::string check = b.Node("check_x", "Assert", {cond, msg, values},
                               {{"T", MakeAttr(std::vector<DataType>{DT_STRING, DT_FLOAT})},
                                {"summarize", MakeAttr(int64_t{2})}});
    std::string y = b.Identity("y", values, DT_FLOAT, {check});
    auto session = NewSession();
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->Create(b.graph()).ok());
    std::vector<Tensor> out;
    absl::Status s = (*session)->Run({}, {y}, {}, &out);
    if (ok) {
      EXPECT_TRUE(s.ok()) << s;
      continue;
    }
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("check_x"), std::string::npos) << s;
    EXPECT_NE(s.message().find("assertion failed: [x must be positive, x =] [-1 2...]"), std::string::npos) << s;
    // As a target, not only as a control input.
    s = (*session)->Run({}, {}, {"check_x"}, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
}

TEST(Assert, ConditionMustBeAScalar) {
  GraphDefBuilder b;
  Tensor two(DT_BOOL, TensorShape({2}));
  two.data<bool>()[0] = two.data<bool>()[1] = true;
  std::string cond = b.Const("cond", two);
  std::string check =
      b.Node("check", "Assert", {cond, b.Const("v", Tensor::Scalar<int32_t>(1))},
             {{"T", MakeAttr(std::vector<DataType>{DT_INT32})}});
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  std::vector<Tensor> out;
  absl::Status s = (*session)->Run({}, {}, {check}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("condition must be a scalar, got shape [2]"), std::string::npos) << s;
}

}  // namespace
}  // namespace sluice
