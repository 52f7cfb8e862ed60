// Spec for GraphDef -> Graph -> GraphDef: a valid GraphDef survives the round
// trip (with attr defaults filled in), Extend-style construction links new
// nodes to existing ones, cycles are legal only through NextIteration, loop
// frames nest, and shape inference follows each op's shape function. The
// catalogue of malformed graphs lives in malformed_graph_test.cc; only a few
// representative messages are pinned here.
#include "engine/graph/graph_constructor.h"

#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph/control_flow.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/graph/shape_refiner.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Inputs(const NodeDef& n) { return {n.input().begin(), n.input().end()}; }

const NodeDef* FindDef(const GraphDef& g, const std::string& name) {
  for (const NodeDef& n : g.node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

std::unique_ptr<Graph> MustBuild(const GraphDef& def) {
  auto g = GraphFromGraphDef(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(g).value() : nullptr;
}

AttrValue ShapeAttr(std::vector<int64_t> dims) {
  AttrValue v;
  TensorShapeProto* shape = v.mutable_shape();  // set even for a scalar (no dims)
  for (int64_t d : dims) shape->add_dim()->set_size(d);
  return v;
}

std::string ShapedPlaceholder(GraphDefBuilder* b, const std::string& name, std::vector<int64_t> dims,
                              DataType dtype = DT_FLOAT) {
  return b->Node(name, "Placeholder", {}, {{"dtype", MakeAttr(dtype)}, {"shape", ShapeAttr(dims)}});
}

Tensor Zeros(DataType dtype, const TensorShape& shape) {
  Tensor t(dtype, shape);
  if (t.TotalBytes() > 0) std::memset(t.raw_data(), 0, t.TotalBytes());
  return t;
}

// ---- Round trip ----

GraphDef SampleGraph() {
  GraphDefBuilder b;
  b.NoOp("init");
  ShapedPlaceholder(&b, "x", {2, 3});
  b.Const("w", Zeros(DT_FLOAT, TensorShape{3, 4}));
  b.Node("mm", "MatMul", {"x", "w"}, {{"T", MakeAttr(DT_FLOAT)}});  // transpose_* defaulted
  b.Const("pred", Tensor::Scalar<bool>(true));
  b.Switch("sw", "mm", "pred", DT_FLOAT);
  b.Identity("taken", "sw:1", DT_FLOAT, {"init", "pred"});
  b.Binary("Add", "sum", "taken", "sw:1", DT_FLOAT);
  b.FindNode("sum")->set_device("/job:localhost/replica:0/task:0/device:CPU:0");
  b.Placeholder("p", DT_INT32);  // shape defaulted
  b.mutable_graph()->mutable_versions()->set_producer(27);
  return b.graph();
}

TEST(GraphConstructor, ValidGraphDefRoundTrips) {
  GraphDef in = SampleGraph();
  auto g = MustBuild(in);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->num_nodes(), in.node_size());
  GraphDef out;
  g->ToGraphDef(&out);
  ASSERT_EQ(out.node_size(), in.node_size());
  for (int i = 0; i < in.node_size(); ++i) {
    SCOPED_TRACE(in.node(i).name());
    EXPECT_EQ(out.node(i).name(), in.node(i).name());  // id order == GraphDef order
    EXPECT_EQ(out.node(i).op(), in.node(i).op());
    EXPECT_EQ(out.node(i).device(), in.node(i).device());
    EXPECT_EQ(Inputs(out.node(i)), Inputs(in.node(i)));
    for (const auto& [name, value] : in.node(i).attr()) {
      ASSERT_TRUE(out.node(i).attr().count(name)) << name;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(out.node(i).attr().at(name), value)) << name;
    }
  }
  EXPECT_THAT(Inputs(*FindDef(out, "taken")), ElementsAre("sw:1", "^init", "^pred"));
  EXPECT_EQ(out.versions().producer(), 27);
}

TEST(GraphConstructor, DefaultAttrsAreAdded) {
  auto g = MustBuild(SampleGraph());
  ASSERT_NE(g, nullptr);
  GraphDef out;
  g->ToGraphDef(&out);
  const NodeDef* mm = FindDef(out, "mm");
  ASSERT_NE(mm, nullptr);
  ASSERT_TRUE(mm->attr().count("transpose_a"));
  EXPECT_EQ(mm->attr().at("transpose_a").value_case(), AttrValue::kB);
  EXPECT_FALSE(mm->attr().at("transpose_a").b());
  EXPECT_FALSE(mm->attr().at("transpose_b").b());
  const NodeDef* p = FindDef(out, "p");
  ASSERT_TRUE(p->attr().count("shape"));
  EXPECT_TRUE(p->attr().at("shape").shape().unknown_rank());
}

TEST(GraphConstructor, RoundTripIsAFixedPoint) {
  auto g1 = MustBuild(SampleGraph());
  ASSERT_NE(g1, nullptr);
  GraphDef once;
  g1->ToGraphDef(&once);
  auto g2 = MustBuild(once);
  ASSERT_NE(g2, nullptr);
  GraphDef twice;
  g2->ToGraphDef(&twice);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(once, twice)) << once.DebugString() << "\nvs\n"
                                                                             << twice.DebugString();
}

TEST(GraphConstructor, NodesKnowTheirTypesAndEdges) {
  auto g = MustBuild(SampleGraph());
  ASSERT_NE(g, nullptr);
  Node* sw = g->FindNode("sw");
  ASSERT_NE(sw, nullptr);
  EXPECT_TRUE(sw->IsSwitch());
  EXPECT_THAT(sw->input_types(), ElementsAre(DT_FLOAT, DT_BOOL));
  EXPECT_THAT(sw->output_types(), ElementsAre(DT_FLOAT, DT_FLOAT));
  Node* taken = g->FindNode("taken");
  const Edge* in0 = taken->input_edge(0);
  ASSERT_NE(in0, nullptr);
  EXPECT_EQ(in0->src, sw);
  EXPECT_EQ(in0->src_output, 1);
  int control = 0;
  for (const Edge* e : taken->in_edges()) control += e->IsControlEdge();
  EXPECT_EQ(control, 2);
  EXPECT_EQ(g->FindNode("nope"), nullptr);
}

// ---- Extend ----

TEST(GraphConstructor, ExtendAddsNodesThatReferenceExistingOnes) {
  GraphDefBuilder first;
  first.Const("a", Tensor::Scalar<float>(1));
  first.Identity("b", "a", DT_FLOAT);
  auto g = MustBuild(first.graph());
  ASSERT_NE(g, nullptr);
  Node* a = g->FindNode("a");
  Node* b = g->FindNode("b");

  GraphDefBuilder second;
  second.Binary("Add", "c", "b", "a", DT_FLOAT);
  second.NoOp("d", {"c", "a"});
  ASSERT_TRUE(ConvertGraphDefToGraph({}, second.graph(), g.get()).ok());

  EXPECT_EQ(g->num_nodes(), 4);
  EXPECT_EQ(g->FindNode("a"), a);  // existing nodes are untouched
  EXPECT_EQ(g->FindNode("b"), b);
  Node* c = g->FindNode("c");
  ASSERT_NE(c, nullptr);
  EXPECT_GT(c->id(), b->id());
  EXPECT_EQ(c->input_edge(0)->src, b);
  EXPECT_EQ(c->input_edge(1)->src, a);
  GraphDef out;
  g->ToGraphDef(&out);
  EXPECT_THAT(Inputs(*FindDef(out, "c")), ElementsAre("b", "a"));
  EXPECT_THAT(Inputs(*FindDef(out, "d")), ElementsAre("^a", "^c"));  // control inputs sorted by node id
}

TEST(GraphConstructor, ExtendRejectsRedefiningAnExistingNode) {
  GraphDefBuilder first;
  first.Const("a", Tensor::Scalar<float>(1));
  auto g = MustBuild(first.graph());
  ASSERT_NE(g, nullptr);
  GraphDefBuilder second;
  second.Const("a", Tensor::Scalar<float>(2));
  absl::Status s = ConvertGraphDefToGraph({}, second.graph(), g.get());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("duplicate node name 'a'"));
}

TEST(GraphConstructor, ExtendChecksCyclesAmongNewNodes) {
  // The new nodes form a cycle with each other while hanging off the old graph.
  GraphDefBuilder first;
  first.Const("a", Tensor::Scalar<float>(1));
  auto g = MustBuild(first.graph());
  ASSERT_NE(g, nullptr);
  GraphDefBuilder second;
  second.Binary("Add", "p", "a", "q", DT_FLOAT);
  second.Identity("q", "p", DT_FLOAT);
  absl::Status s = ConvertGraphDefToGraph({}, second.graph(), g.get());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
}

// ---- A few representative errors ----

absl::Status BuildError(const GraphDef& def) {
  auto g = GraphFromGraphDef(def);
  return g.ok() ? absl::OkStatus() : g.status();
}

TEST(GraphConstructorErrors, UnknownOpSuggestsAName) {
  GraphDefBuilder b;
  b.Node("n", "Identiti", {}, {});
  absl::Status s = BuildError(b.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'n'"));
  EXPECT_THAT(s.message(), HasSubstr("unknown op 'Identiti' (did you mean 'Identity'?)"));
}

TEST(GraphConstructorErrors, DanglingInputSuggestsANode) {
  GraphDefBuilder b;
  b.Const("alpha", Tensor::Scalar<float>(1));
  b.Identity("id", "alpah", DT_FLOAT);
  absl::Status s = BuildError(b.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'id' (op Identity): input 0 ('alpah'): no node named 'alpah'"));
  EXPECT_THAT(s.message(), HasSubstr("did you mean 'alpha'?"));
}

TEST(GraphConstructorErrors, TypeMismatchOnAnEdge) {
  GraphDefBuilder b;
  b.Const("i", Tensor::Scalar<int32_t>(1));
  b.Const("f", Tensor::Scalar<float>(1));
  b.Binary("Add", "sum", "f", "i", DT_FLOAT);
  absl::Status s = BuildError(b.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'sum' (op Add): input 1 ('i'): has type int32 but op Add expects float"));
}

TEST(GraphConstructorErrors, ControlInputBeforeDataInput) {
  GraphDefBuilder b;
  b.Const("a", Tensor::Scalar<float>(1));
  b.Node("id", "Identity", {"^a", "a"}, {{"T", MakeAttr(DT_FLOAT)}});
  absl::Status s = BuildError(b.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("input 1 ('a'): data input after a control input"));
}

TEST(GraphConstructorErrors, ShapeErrorsNameTheNode) {
  GraphDefBuilder b;
  ShapedPlaceholder(&b, "x", {2, 3});
  ShapedPlaceholder(&b, "y", {4, 5});
  b.Node("mm", "MatMul", {"x", "y"}, {{"T", MakeAttr(DT_FLOAT)}});
  absl::Status s = BuildError(b.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'mm' (op MatMul): inner dimensions differ"));
  GraphConstructorOptions no_shapes;
  no_shapes.infer_shapes = false;
  EXPECT_TRUE(GraphFromGraphDef(b.graph(), no_shapes).ok());
}

// ---- Cycles and frames ----

// s = 0; i = 1; while (i < limit) { s += i; i += 1; } as in control_flow_test.
// Node names are prefixed with `p`; returns the Exit of s.
std::string SumLoop(GraphDefBuilder* b, const std::string& p, const std::string& limit, const std::string& frame,
                    const std::string& seed = "") {
  std::string one = b->Const(p + "one", Tensor::Scalar<int32_t>(1));
  std::string zero = b->Const(p + "zero", Tensor::Scalar<int32_t>(0));
  if (!seed.empty()) {
    // Constants of an inner loop need an input from the enclosing frame.
    b->FindNode(one)->add_input("^" + seed);
    b->FindNode(zero)->add_input("^" + seed);
  }
  std::string limit_e = b->Enter(p + "limit_e", limit, DT_INT32, frame, true);
  std::string one_e = b->Enter(p + "one_e", one, DT_INT32, frame, true);
  std::string i_e = b->Enter(p + "i_e", one, DT_INT32, frame);
  std::string s_e = b->Enter(p + "s_e", zero, DT_INT32, frame);
  std::string i_m = b->Merge(p + "i_m", {i_e, p + "i_next"}, DT_INT32);
  std::string s_m = b->Merge(p + "s_m", {s_e, p + "s_next"}, DT_INT32);
  std::string cond = b->LoopCond(p + "cond", b->Binary("Less", p + "less", i_m, limit_e, DT_INT32));
  std::string i_sw = b->Switch(p + "i_sw", i_m, cond, DT_INT32);
  std::string s_sw = b->Switch(p + "s_sw", s_m, cond, DT_INT32);
  b->Exit(p + "i_exit", i_sw + ":0", DT_INT32);
  std::string s_exit = b->Exit(p + "s_exit", s_sw + ":0", DT_INT32);
  std::string i_body = b->Identity(p + "i_body", i_sw + ":1", DT_INT32);
  std::string s_body = b->Identity(p + "s_body", s_sw + ":1", DT_INT32);
  b->NextIteration(p + "i_next", b->Binary("Add", p + "i_new", i_body, one_e, DT_INT32), DT_INT32);
  b->NextIteration(p + "s_next", b->Binary("Add", p + "s_new", s_body, i_body, DT_INT32), DT_INT32);
  return s_exit;
}

// An outer loop ("outer") whose body runs an inner loop ("inner") seeded from
// the outer body; the outer sum adds the inner loop's result.
GraphDef NestedLoops() {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(4));
  b.Node("before", "Identity", {limit}, {{"T", MakeAttr(DT_INT32)}});
  std::string one = b.Const("one", Tensor::Scalar<int32_t>(1));
  std::string zero = b.Const("zero", Tensor::Scalar<int32_t>(0));
  std::string limit_e = b.Enter("limit_e", limit, DT_INT32, "outer", true);
  std::string one_e = b.Enter("one_e", one, DT_INT32, "outer", true);
  std::string i_m = b.Merge("i_m", {b.Enter("i_e", one, DT_INT32, "outer"), "i_next"}, DT_INT32);
  std::string s_m = b.Merge("s_m", {b.Enter("s_e", zero, DT_INT32, "outer"), "s_next"}, DT_INT32);
  std::string cond = b.LoopCond("cond", b.Binary("Less", "less", i_m, limit_e, DT_INT32));
  std::string i_sw = b.Switch("i_sw", i_m, cond, DT_INT32);
  std::string s_sw = b.Switch("s_sw", s_m, cond, DT_INT32);
  b.Exit("i_exit", i_sw + ":0", DT_INT32);
  std::string s_exit = b.Exit("s_exit", s_sw + ":0", DT_INT32);
  std::string i_body = b.Identity("i_body", i_sw + ":1", DT_INT32);
  std::string s_body = b.Identity("s_body", s_sw + ":1", DT_INT32);
  std::string inner_sum = SumLoop(&b, "in_", i_body, "inner", i_body);
  b.NextIteration("i_next", b.Binary("Add", "i_new", i_body, one_e, DT_INT32), DT_INT32);
  b.NextIteration("s_next", b.Binary("Add", "s_new", s_body, inner_sum, DT_INT32), DT_INT32);
  b.Identity("after", s_exit, DT_INT32);
  return b.graph();
}

TEST(CheckForIllegalCycles, AcceptsAWhileLoop) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(5));
  SumLoop(&b, "", limit, "loop");
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(CheckForIllegalCycles(*g).ok());
  auto nested = MustBuild(NestedLoops());
  ASSERT_NE(nested, nullptr);
  EXPECT_TRUE(CheckForIllegalCycles(*nested).ok());
}

TEST(CheckForIllegalCycles, RejectsAPlainCycleNamingANodeOnIt) {
  // downstream <- c <- b <- a <- c is a cycle; x feeds it; downstream hangs
  // off it and comes first in id order, so the search starts off the cycle.
  Graph g;
  auto add = [&](NodeDef def) {
    auto n = g.AddNode(std::move(def));
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? *n : nullptr;
  };
  auto identity = [](const std::string& name) {
    NodeDef d;
    d.set_name(name);
    d.set_op("Identity");
    (*d.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
    return d;
  };
  Node* downstream = add(identity("downstream"));
  NodeDef xdef;
  xdef.set_name("x");
  xdef.set_op("Const");
  (*xdef.mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
  (*xdef.mutable_attr())["value"] = MakeAttr(Tensor::Scalar<float>(1));
  Node* x = add(xdef);
  NodeDef adef;
  adef.set_name("a");
  adef.set_op("Add");
  (*adef.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  Node* a = add(adef);
  Node* b = add(identity("b"));
  Node* c = add(identity("c"));
  ASSERT_TRUE(downstream && x && a && b && c);
  g.AddEdge(c, 0, downstream, 0);
  g.AddEdge(x, 0, a, 0);
  g.AddEdge(c, 0, a, 1);
  g.AddEdge(a, 0, b, 0);
  g.AddEdge(b, 0, c, 0);

  absl::Status s = CheckForIllegalCycles(g);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("is on a cycle that does not pass through a NextIteration node"));
  // The named node is on the cycle.
  std::string msg(s.message());
  ASSERT_EQ(msg.rfind("node '", 0), 0u) << msg;
  std::string named = msg.substr(6, msg.find('\'', 6) - 6);
  EXPECT_THAT((std::set<std::string>{"a", "b", "c"}), ::testing::Contains(named)) << msg;

  // Breaking the cycle makes the graph legal.
  g.RemoveEdge(c->input_edge(0));
  EXPECT_TRUE(CheckForIllegalCycles(g).ok());
}

TEST(CheckForIllegalCycles, GraphDefWithACycleIsRejected) {
  GraphDefBuilder b;
  b.Const("x", Tensor::Scalar<float>(1));
  b.Binary("Add", "a", "x", "b", DT_FLOAT);
  b.Identity("b", "a", DT_FLOAT);
  absl::Status s = BuildError(b.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::AnyOf(HasSubstr("node 'a'"), HasSubstr("node 'b'")));
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
}

TEST(CheckForIllegalCycles, AControlEdgeCycleIsACycleToo) {
  GraphDefBuilder b;
  b.NoOp("p", {"q"});
  b.NoOp("q", {"p"});
  absl::Status s = BuildError(b.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
}

TEST(BuildControlFlowInfo, AssignsRootOuterAndInnerFrames) {
  auto g = MustBuild(NestedLoops());
  ASSERT_NE(g, nullptr);
  std::vector<ControlFlowInfo> info;
  ASSERT_TRUE(BuildControlFlowInfo(*g, &info).ok());
  ASSERT_EQ(static_cast<int>(info.size()), g->num_node_ids());
  auto frame = [&](const std::string& name) {
    Node* n = g->FindNode(name);
    EXPECT_NE(n, nullptr) << name;
    return n ? info[n->id()] : ControlFlowInfo{"<missing>", "<missing>"};
  };
  auto expect_frame = [&](const std::string& name, const std::string& f, const std::string& parent) {
    ControlFlowInfo i = frame(name);
    EXPECT_EQ(i.frame_name, f) << name;
    EXPECT_EQ(i.parent_frame, parent) << name;
  };
  // Root frame: before the loop, the Enters of the outer loop (an Enter runs
  // in its input's frame and moves its output into the child frame), and
  // whatever consumes the outer Exit.
  for (const char* n : {"limit", "before", "one", "zero", "i_e", "s_e", "limit_e", "one_e", "after"}) {
    expect_frame(n, "", "");
  }
  // Outer frame: the outer body, the inner loop's Enters and its inputs, and
  // the outer Exits (an Exit runs in the loop and moves its output out).
  for (const char* n : {"i_m", "s_m", "less", "cond", "i_sw", "s_sw", "i_body", "s_body", "i_new", "i_next", "in_one",
                        "in_zero", "in_limit_e", "in_i_e", "s_new", "s_next", "s_exit", "i_exit"}) {
    expect_frame(n, "outer", "");
  }
  // Inner frame, whose parent is the outer frame.
  for (const char* n : {"in_i_m", "in_s_m", "in_less", "in_cond", "in_s_body", "in_s_new", "in_s_next", "in_s_exit",
                        "in_i_exit"}) {
    expect_frame(n, "inner", "outer");
  }
}

TEST(BuildControlFlowInfo, AGraphWithoutLoopsIsInTheRootFrameAndACycleIsNamed) {
  Graph g;
  auto add = [&](const std::string& name, const std::string& op) {
    NodeDef def;
    def.set_name(name);
    def.set_op(op);
    if (op == "Const") {
      (*def.mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
      (*def.mutable_attr())["value"] = MakeAttr(Tensor::Scalar<float>(1));
    }
    auto n = g.AddNode(std::move(def));
    EXPECT_TRUE(n.ok()) << n.status();
    return *n;
  };
  Node* x = add("x", "Const");
  Node* y = add("y", "NoOp");
  g.AddControlEdge(x, y);
  std::vector<ControlFlowInfo> info;
  ASSERT_TRUE(BuildControlFlowInfo(g, &info).ok());
  ASSERT_EQ(info.size(), 2u);
  EXPECT_EQ(info[x->id()].frame_name, "");
  EXPECT_EQ(info[y->id()].frame_name, "");
  // p <-> q is a cycle (GraphFromGraphDef rejects it earlier); z, after it,
  // cannot run either, but p comes first by id.
  Node* p = add("p", "NoOp");
  Node* q = add("q", "NoOp");
  Node* z = add("z", "NoOp");
  g.AddControlEdge(y, p);
  g.AddControlEdge(p, q);
  g.AddControlEdge(q, p);
  g.AddControlEdge(q, z);
  absl::Status s = BuildControlFlowInfo(g, &info);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'p' (op NoOp): is unreachable from any source node"));
}

// ---- Shape inference ----

class ShapeRefinerTest : public ::testing::Test {
 protected:
  // Builds with infer_shapes on, then runs a refiner to read the shapes.
  void Infer(const GraphDef& def) {
    graph_ = MustBuild(def);
    ASSERT_NE(graph_, nullptr);
    absl::Status s = refiner_.InferShapes(*graph_);
    ASSERT_TRUE(s.ok()) << s;
  }
  std::string Shape(const std::string& node, int output = 0) {
    Node* n = graph_->FindNode(node);
    EXPECT_NE(n, nullptr) << node;
    return n ? refiner_.OutputShape(n, output).DebugString() : "<no node>";
  }

  std::unique_ptr<Graph> graph_;
  ShapeRefiner refiner_;
};

TEST_F(ShapeRefinerTest, MatMul) {
  GraphDefBuilder b;
  ShapedPlaceholder(&b, "a", {2, 3});
  ShapedPlaceholder(&b, "b", {3, 4});
  ShapedPlaceholder(&b, "at", {3, 2});
  ShapedPlaceholder(&b, "partial", {-1, 3});
  b.Node("ab", "MatMul", {"a", "b"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("atb", "MatMul", {"at", "b"}, {{"T", MakeAttr(DT_FLOAT)}, {"transpose_a", MakeAttr(true)}});
  b.Node("pb", "MatMul", {"partial", "b"}, {{"T", MakeAttr(DT_FLOAT)}});
  Infer(b.graph());
  EXPECT_EQ(Shape("ab"), "[2,4]");
  EXPECT_EQ(Shape("atb"), "[2,4]");
  EXPECT_EQ(Shape("pb"), "[?,4]");
}

TEST_F(ShapeRefinerTest, BroadcastingAdd) {
  GraphDefBuilder b;
  ShapedPlaceholder(&b, "x", {2, 1});
  b.Const("y", Tensor::FromVector<float>({1, 2, 3}));
  ShapedPlaceholder(&b, "z", {-1, 3});
  b.Binary("Add", "xy", "x", "y", DT_FLOAT);
  b.Binary("Add", "yx", "y", "x", DT_FLOAT);
  b.Binary("Mul", "xz", "x", "z", DT_FLOAT);
  b.Binary("Less", "lt", "x", "y", DT_FLOAT);
  Infer(b.graph());
  EXPECT_EQ(Shape("xy"), "[2,3]");
  EXPECT_EQ(Shape("yx"), "[2,3]");
  EXPECT_EQ(Shape("xz"), "[2,3]");
  EXPECT_EQ(Shape("lt"), "[2,3]");
}

// A shape computed at run time by Shape(x) (as gradients build them) gives
// the ops that take it as a tensor x's partial shape.
TEST_F(ShapeRefinerTest, ShapeOfXGivesItsConsumersXsPartialShape) {
  GraphDefBuilder b;
  ShapedPlaceholder(&b, "x", {-1, 6, 6, 2});
  ShapedPlaceholder(&b, "flat", {-1, 72});
  ShapedPlaceholder(&b, "filter", {3, 3, 2, 4});
  ShapedPlaceholder(&b, "grad", {-1, 6, 6, 4});
  b.Node("x_shape", "Shape", {"x"}, {{"T", MakeAttr(DT_FLOAT)}, {"out_type", MakeAttr(DT_INT32)}});
  b.Node("unflat", "Reshape", {"flat", "x_shape"}, {{"T", MakeAttr(DT_FLOAT)}, {"Tshape", MakeAttr(DT_INT32)}});
  b.Node("input_grad", "Conv2DBackpropInput", {"x_shape", "filter", "grad"},
         {{"T", MakeAttr(DT_FLOAT)}, {"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})},
          {"padding", MakeAttr("SAME")}});
  Infer(b.graph());
  EXPECT_EQ(Shape("unflat"), "[?,6,6,2]");
  EXPECT_EQ(Shape("input_grad"), "[?,6,6,2]");
}

TEST_F(ShapeRefinerTest, IncompatibleBroadcastIsAnError) {
  GraphDefBuilder b;
  ShapedPlaceholder(&b, "x", {2, 3});
  ShapedPlaceholder(&b, "y", {4});
  b.Binary("Add", "bad", "x", "y", DT_FLOAT);
  absl::Status s = BuildError(b.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'bad' (op Add)"));
  EXPECT_THAT(s.message(), HasSubstr("broadcast"));
}

TEST_F(ShapeRefinerTest, PlaceholderShapeAttr) {
  GraphDefBuilder b;
  ShapedPlaceholder(&b, "full", {2, 5});
  ShapedPlaceholder(&b, "partial", {-1, 5});
  ShapedPlaceholder(&b, "scalar", {});
  b.Placeholder("any", DT_FLOAT);
  b.Identity("id", "partial", DT_FLOAT);
  Infer(b.graph());
  EXPECT_EQ(Shape("full"), "[2,5]");
  EXPECT_EQ(Shape("partial"), "[?,5]");
  EXPECT_EQ(Shape("scalar"), "[]");
  EXPECT_EQ(Shape("any"), "<unknown>");
  EXPECT_EQ(Shape("id"), "[?,5]");
}

TEST_F(ShapeRefinerTest, ConstAndVariable) {
  GraphDefBuilder b;
  b.Const("c", Zeros(DT_INT32, TensorShape{3, 0, 2}));
  b.Variable("v", DT_FLOAT, TensorShape{4, 4});
  Infer(b.graph());
  EXPECT_EQ(Shape("c"), "[3,0,2]");
  EXPECT_EQ(Shape("v"), "[4,4]");
}

// Merge forwards whichever input arrives, so its shape is what all inputs
// have in common, not what they could agree on.
TEST_F(ShapeRefinerTest, MergeKeepsOnlyWhatAllInputsShare) {
  GraphDefBuilder b;
  ShapedPlaceholder(&b, "p23", {2, 3});
  ShapedPlaceholder(&b, "q23", {2, 3});
  ShapedPlaceholder(&b, "p2u", {2, -1});
  ShapedPlaceholder(&b, "pu3", {-1, 3});
  ShapedPlaceholder(&b, "p53", {5, 3});
  ShapedPlaceholder(&b, "p2", {2});
  b.Placeholder("any", DT_FLOAT);
  b.Merge("same", {"p23", "q23"}, DT_FLOAT);
  b.Merge("partials", {"p2u", "pu3"}, DT_FLOAT);
  b.Merge("dims_differ", {"p23", "p53"}, DT_FLOAT);
  b.Merge("ranks_differ", {"p23", "p2"}, DT_FLOAT);
  b.Merge("with_unknown", {"p23", "any"}, DT_FLOAT);
  Infer(b.graph());
  EXPECT_EQ(Shape("same"), "[2,3]");
  EXPECT_EQ(Shape("same", 1), "[]");  // value_index
  EXPECT_EQ(Shape("partials"), "[?,?]");
  EXPECT_EQ(Shape("dims_differ"), "[?,3]");
  EXPECT_EQ(Shape("ranks_differ"), "<unknown>");
  EXPECT_EQ(Shape("with_unknown"), "<unknown>");
}

// Adds loop variable x (nodes x0, x_e, x_m, x_sw, x_next, x_exit) to
// SumLoop's frame "loop": it starts as `initial` and becomes `body(x)` each
// iteration. Returns its Exit.
std::string LoopVariable(GraphDefBuilder* b, const Tensor& initial,
                         const std::function<std::string(const std::string&)>& body) {
  b->Const("x0", initial);
  std::string x_m = b->Merge("x_m", {b->Enter("x_e", "x0", DT_FLOAT, "loop"), "x_next"}, DT_FLOAT);
  std::string x_sw = b->Switch("x_sw", x_m, "cond", DT_FLOAT);
  b->NextIteration("x_next", body(x_sw + ":1"), DT_FLOAT);
  return b->Exit("x_exit", x_sw + ":0", DT_FLOAT);
}

// A loop variable that keeps its shape in every iteration keeps it through
// the back edge, the Switch and the Exit.
TEST_F(ShapeRefinerTest, LoopVariablesKeepTheShapeEveryIterationKeeps) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(5));
  SumLoop(&b, "", limit, "loop");
  Infer(b.graph());
  EXPECT_EQ(Shape("i_e"), "[]");
  EXPECT_EQ(Shape("i_m"), "[]");
  EXPECT_EQ(Shape("i_sw", 1), "[]");
  EXPECT_EQ(Shape("s_exit"), "[]");
  EXPECT_EQ(Shape("cond"), "[]");
  EXPECT_EQ(Shape("i_next"), "[]");
}

// The loop variable starts as [1,3] and becomes [2,3] after one iteration.
// Using the initial shape for the loop's result would reject a valid graph.
TEST_F(ShapeRefinerTest, ALoopThatChangesAShapeIsNotRejected) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(3));
  SumLoop(&b, "", limit, "loop");
  b.Const("grow", Zeros(DT_FLOAT, TensorShape{2, 3}));
  std::string grow_e = b.Enter("grow_e", "grow", DT_FLOAT, "loop", true);
  std::string x_exit = LoopVariable(&b, Zeros(DT_FLOAT, TensorShape{1, 3}), [&](const std::string& x) {
    return b.Binary("Add", "x_new", x, grow_e, DT_FLOAT);
  });
  ShapedPlaceholder(&b, "lhs", {4, 2});
  b.Node("after", "MatMul", {"lhs", x_exit}, {{"T", MakeAttr(DT_FLOAT)}});  // [4,2] x [2,3] at run time
  Infer(b.graph());
  EXPECT_EQ(Shape("x_m"), "[?,3]");  // [1,3], then [2,3]
  EXPECT_EQ(Shape("x_exit"), "[?,3]");
  EXPECT_EQ(Shape("after"), "[4,3]");
}

// A loop variable whose rank grows every iteration (a Pack of itself) has
// no shape that fits every iteration but the unknown one.
TEST_F(ShapeRefinerTest, ALoopThatChangesARankGetsAnUnknownShape) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(3));
  SumLoop(&b, "", limit, "loop");
  LoopVariable(&b, Zeros(DT_FLOAT, TensorShape{2}), [&](const std::string& x) {
    return b.Node("x_new", "Pack", {x}, {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(int64_t{1})}});
  });
  Infer(b.graph());
  EXPECT_EQ(Shape("x_m"), "<unknown>");
  EXPECT_EQ(Shape("x_exit"), "<unknown>");
  EXPECT_EQ(Shape("i_m"), "[]");  // the other loop variable still settles
}


// ---- Stacks: a pop takes the shapes pushed onto its stack ----

std::string Stack(GraphDefBuilder* b, const std::string& name) {
  b->Const(name + "_size", Tensor::Scalar<int32_t>(-1));
  return b->Node(name, "StackV2", {name + "_size"}, {{"elem_type", MakeAttr(DT_FLOAT)}});
}
std::string Push(GraphDefBuilder* b, const std::string& name, const std::string& handle, const std::string& value) {
  return b->Node(name, "StackPushV2", {handle, value}, {{"T", MakeAttr(DT_FLOAT)}});
}
std::string Pop(GraphDefBuilder* b, const std::string& name, const std::string& handle) {
  return b->Node(name, "StackPopV2", {handle}, {{"elem_type", MakeAttr(DT_FLOAT)}});
}

// A while loop pushes its variable (a [2,3] each iteration) onto a stack
// made outside it, as TensorFlow's loop gradients do; pops after the loop,
// straight from the StackV2 and through an Identity, get [2,3]. The first
// pop depends on nothing else, so it waits for the push.
TEST_F(ShapeRefinerTest, APopTakesTheShapeOfThePushesOntoItsStack) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(3));
  SumLoop(&b, "", limit, "loop");
  std::string stack = Stack(&b, "stack");
  std::string handle = b.Enter("stack_e", stack, DT_RESOURCE, "loop", true);
  LoopVariable(&b, Zeros(DT_FLOAT, TensorShape{2, 3}), [&](const std::string& x) {
    Push(&b, "push", handle, b.Binary("Mul", "x_sq", x, x, DT_FLOAT));
    return b.Identity("x_new", x, DT_FLOAT);
  });
  Pop(&b, "pop", stack);
  Pop(&b, "pop_through_identity", b.Identity("stack_id", stack, DT_RESOURCE));
  Infer(b.graph());
  EXPECT_EQ(Shape("pop"), "[2,3]");
  EXPECT_EQ(Shape("pop_through_identity"), "[2,3]");
}

// Two pushes of different shapes onto one stack: a pop may return either.
TEST_F(ShapeRefinerTest, APopWidensThePushedShapes) {
  GraphDefBuilder b;
  std::string stack = Stack(&b, "stack");
  ShapedPlaceholder(&b, "a", {2, 3});
  ShapedPlaceholder(&b, "c", {4, 3});
  Push(&b, "push_a", stack, "a");
  Push(&b, "push_c", stack, "c");
  Pop(&b, "pop", stack);
  Infer(b.graph());
  EXPECT_EQ(Shape("pop"), "[?,3]");
}

// A push whose handle comes through a Merge (either of two stacks) could
// push onto any stack: no pop gets a shape, not even one of a third stack.
TEST_F(ShapeRefinerTest, APushOfAnUnknownStackLeavesEveryPopUnknown) {
  GraphDefBuilder b;
  std::string s1 = Stack(&b, "s1"), s2 = Stack(&b, "s2"), s3 = Stack(&b, "s3");
  std::string either = b.Merge("either", {s1, s2}, DT_RESOURCE);
  ShapedPlaceholder(&b, "a", {2, 3});
  ShapedPlaceholder(&b, "c", {5});
  Push(&b, "push_either", either, "c");
  Push(&b, "push_s1", s1, "a");
  Push(&b, "push_s3", s3, "a");
  Pop(&b, "pop_s1", s1);
  Pop(&b, "pop_s3", s3);
  Infer(b.graph());
  EXPECT_EQ(Shape("pop_s1"), "<unknown>");
  EXPECT_EQ(Shape("pop_s3"), "<unknown>");
}

// A pop whose value is pushed back onto its own stack cannot wait for that
// push: it goes on with an unknown shape, and the nodes after it still get
// their shapes.
TEST_F(ShapeRefinerTest, APopPushedBackOntoItsStackIsUnknownAndInferenceGoesOn) {
  GraphDefBuilder b;
  std::string stack = Stack(&b, "stack");
  ShapedPlaceholder(&b, "a", {2, 3});
  Push(&b, "push_a", stack, "a");
  std::string pop = Pop(&b, "pop", stack);
  Push(&b, "push_back", stack, pop);
  b.Identity("after", "a", DT_FLOAT, {"push_back"});  // reached only once the push is
  Infer(b.graph());
  EXPECT_EQ(Shape("pop"), "<unknown>");
  EXPECT_EQ(Shape("after"), "[2,3]");
}

// ---- TensorArrays: a read or gather takes the shapes written into its array ----

// An array of floats; `element_shape` declared, or an unknown rank when
// null.
std::string Array(GraphDefBuilder* b, const std::string& name, const std::vector<int64_t>* element_shape = nullptr) {
  b->Const(name + "_size", Tensor::Scalar<int32_t>(10));
  AttrValue shape;
  if (element_shape != nullptr) {
    shape = ShapeAttr(*element_shape);
  } else {
    shape.mutable_shape()->set_unknown_rank(true);
  }
  return b->Node(name, "TensorArrayV3", {name + "_size"}, {{"dtype", MakeAttr(DT_FLOAT)}, {"element_shape", shape}});
}
std::string Index(GraphDefBuilder* b, const std::string& name) {
  return b->Const(name, Tensor::Scalar<int32_t>(0));
}
// `index`: a scalar int32 tensor, or "" for a new constant 0.
std::string Write(GraphDefBuilder* b, const std::string& name, const std::string& handle, const std::string& value,
                  const std::string& flow, const std::string& index = "") {
  return b->Node(name, "TensorArrayWriteV3", {handle, index.empty() ? Index(b, name + "_i") : index, value, flow},
                 {{"T", MakeAttr(DT_FLOAT)}});
}
std::string Scatter(GraphDefBuilder* b, const std::string& name, const std::string& handle, const std::string& value,
                    const std::string& flow) {
  b->Const(name + "_i", Tensor::FromVector<int32_t>({0, 1, 2}));
  return b->Node(name, "TensorArrayScatterV3", {handle, name + "_i", value, flow}, {{"T", MakeAttr(DT_FLOAT)}});
}
std::string Read(GraphDefBuilder* b, const std::string& name, const std::string& handle, const std::string& flow) {
  return b->Node(name, "TensorArrayReadV3", {handle, Index(b, name + "_i"), flow}, {{"dtype", MakeAttr(DT_FLOAT)}});
}
std::string Gather(GraphDefBuilder* b, const std::string& name, const std::string& handle, const std::string& flow) {
  b->Const(name + "_i", Tensor::FromVector<int32_t>({0, 1, 2, 3}));
  return b->Node(name, "TensorArrayGatherV3", {handle, name + "_i", flow}, {{"dtype", MakeAttr(DT_FLOAT)}});
}
std::string GradArray(GraphDefBuilder* b, const std::string& name, const std::string& handle,
                      const std::string& flow, const std::string& source) {
  return b->Node(name, "TensorArrayGradV3", {handle, flow}, {{"source", MakeAttr(source)}});
}

// A while loop writes its variable (a [2,3] each iteration) into an array
// made outside it, as tf.TensorArray.write in a loop does; after the loop a
// read gets [2,3] and a gather of 4 indices [4,2,3]. A scatter of [3,5] rows
// into another array gives its reads [5].
TEST_F(ShapeRefinerTest, AReadTakesTheShapeWrittenIntoItsArray) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(3));
  SumLoop(&b, "", limit, "loop");
  std::string ta = Array(&b, "ta");
  std::string handle = b.Enter("ta_e", ta, DT_RESOURCE, "loop", true);
  std::string flow_in = b.Enter("flow_e", ta + ":1", DT_FLOAT, "loop", true);
  LoopVariable(&b, Zeros(DT_FLOAT, TensorShape{2, 3}), [&](const std::string& x) {
    Write(&b, "write", handle, b.Binary("Mul", "x_sq", x, x, DT_FLOAT), flow_in, "i_body");
    return b.Identity("x_new", x, DT_FLOAT);
  });
  Read(&b, "read", ta, ta + ":1");
  Gather(&b, "gather", b.Identity("ta_id", ta, DT_RESOURCE), ta + ":1");
  std::string rows = Array(&b, "rows");
  ShapedPlaceholder(&b, "m", {3, 5});
  std::string scattered = Scatter(&b, "scatter", rows, "m", rows + ":1");
  Read(&b, "row", rows, scattered);
  Infer(b.graph());
  EXPECT_EQ(Shape("read"), "[2,3]");
  EXPECT_EQ(Shape("gather"), "[4,2,3]");
  EXPECT_EQ(Shape("row"), "[5]");
}

// The element shape an array declares and the shapes written into it merge:
// a declared [?,4] with writes of [2,?] and [2,4] reads as [2,4]; writes of
// two shapes widen ([2,3] and [5,3] read as [?,3]).
TEST_F(ShapeRefinerTest, AReadMergesTheDeclaredAndTheWrittenShapes) {
  GraphDefBuilder b;
  const std::vector<int64_t> partial = {-1, 4};
  std::string declared = Array(&b, "declared", &partial);
  ShapedPlaceholder(&b, "p", {2, -1});
  ShapedPlaceholder(&b, "q", {2, 4});
  std::string f1 = Write(&b, "w1", declared, "p", declared + ":1");
  std::string f2 = Write(&b, "w2", declared, "q", f1);
  Read(&b, "read_declared", declared, f2);
  std::string mixed = Array(&b, "mixed");
  ShapedPlaceholder(&b, "a", {2, 3});
  ShapedPlaceholder(&b, "c", {5, 3});
  Write(&b, "wa", mixed, "a", mixed + ":1");
  Write(&b, "wc", mixed, "c", mixed + ":1");
  Read(&b, "read_mixed", mixed, mixed + ":1");
  Infer(b.graph());
  EXPECT_EQ(Shape("read_declared"), "[2,4]");
  EXPECT_EQ(Shape("read_mixed"), "[?,3]");
}

// Gradient arrays: every TensorArrayGradV3 of one array with one source is
// the same array at run time (a gradient's scatter after the loop, its reads
// in the gradient loop, through their own grad nodes). A grad array of
// another source, and the forward array itself, are other arrays.
TEST_F(ShapeRefinerTest, GradientArraysOfOneSourceAreOneArray) {
  GraphDefBuilder b;
  std::string ta = Array(&b, "ta");
  ShapedPlaceholder(&b, "fwd", {7});
  std::string fwd_flow = Write(&b, "fwd_write", ta, "fwd", ta + ":1");
  std::string g1 = GradArray(&b, "grad1", ta, fwd_flow, "gradients");
  ShapedPlaceholder(&b, "dy", {3, 8, 2});
  std::string scattered = Scatter(&b, "grad_scatter", g1, "dy", g1 + ":1");
  std::string g2 = GradArray(&b, "grad2", b.Identity("ta_id", ta, DT_RESOURCE), scattered, "gradients");
  Read(&b, "grad_read", g2, g2 + ":1");
  std::string other = GradArray(&b, "other", ta, fwd_flow, "gradients_1");
  Read(&b, "other_read", other, other + ":1");
  Read(&b, "fwd_read", ta, fwd_flow);
  Infer(b.graph());
  EXPECT_EQ(Shape("grad_read"), "[8,2]");
  EXPECT_EQ(Shape("other_read"), "<unknown>");  // nothing written into it
  EXPECT_EQ(Shape("fwd_read"), "[7]");
}

// A write whose handle comes through a Merge could write into any array:
// no read of any array gets a shape. Stacks are containers of another kind
// and keep theirs.
TEST_F(ShapeRefinerTest, AWriteIntoAnUnknownArrayLeavesEveryReadUnknown) {
  GraphDefBuilder b;
  std::string t1 = Array(&b, "t1"), t2 = Array(&b, "t2");
  std::string either = b.Merge("either", {t1, t2}, DT_RESOURCE);
  ShapedPlaceholder(&b, "a", {2, 3});
  Write(&b, "write_either", either, "a", t1 + ":1");
  Write(&b, "write_t2", t2, "a", t2 + ":1");
  Read(&b, "read_t2", t2, t2 + ":1");
  std::string stack = Stack(&b, "stack");
  Push(&b, "push", stack, "a");
  Pop(&b, "pop", stack);
  Infer(b.graph());
  EXPECT_EQ(Shape("read_t2"), "<unknown>");
  EXPECT_EQ(Shape("pop"), "[2,3]");
}

}  // namespace
}  // namespace sluice
