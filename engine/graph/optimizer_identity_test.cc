// Spec for Identity-chain removal: chains of forwarding Identities collapse
// onto their input and the graph computes the same values (run through a
// session with the pass on and off); Identities that read a variable, carry
// control edges, sit in a loop, feed a fetch or cross devices stay.
#include "engine/graph/optimizer_identity.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/graph/control_flow_builders.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

std::unique_ptr<Graph> MustBuild(const GraphDef& def) {
  auto g = GraphFromGraphDef(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(g).value() : nullptr;
}

bool Has(const Graph& g, const std::string& name) { return g.FindNode(name) != nullptr; }

int Remove(Graph* g) { return RemoveIdentityChains(IdentityRemovalOptions(), g); }

// The data input of `node` as "src:port".
std::string InputOf(const Graph& g, const std::string& node, int port = 0) {
  const Edge* e = g.FindNode(node)->input_edge(port);
  return e == nullptr ? "<none>" : absl::StrCat(e->src->name(), ":", e->src_output);
}

struct RunResult {
  std::vector<Tensor> outputs;
  int nodes = 0;
};

RunResult RunWith(bool remove, const GraphDef& def, const std::vector<std::string>& fetches,
                  const std::vector<std::pair<std::string, Tensor>>& feeds = {},
                  const std::vector<std::string>& init = {}) {
  SessionOptions options;
  options.enable_cse = false;
  options.enable_constant_folding = false;
  options.enable_identity_removal = remove;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  EXPECT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> ignored;
  if (!init.empty()) {
    EXPECT_TRUE((*session)->Run({}, {}, init, &ignored).ok());
  }
  RunResult result;
  RunMetadata metadata;
  absl::Status s = (*session)->Run(RunOptions(), feeds, fetches, {}, &result.outputs, &metadata);
  EXPECT_TRUE(s.ok()) << s;
  result.nodes = metadata.executed_graph_nodes;
  return result;
}

void ExpectSameTensors(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].DebugString(100), b[i].DebugString(100)) << "output " << i;
}

TEST(IdentityRemoval, AChainCollapsesOntoItsInput) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Identity("i1", "x", DT_FLOAT);
  b.Identity("i2", "i1", DT_FLOAT);
  b.Node("y", "Neg", {"i2"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Binary("Add", "z", "i1", "y", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);

  EXPECT_EQ(Remove(g.get()), 2);
  EXPECT_FALSE(Has(*g, "i1"));
  EXPECT_FALSE(Has(*g, "i2"));
  EXPECT_EQ(InputOf(*g, "y"), "x:0");
  EXPECT_EQ(InputOf(*g, "z", 0), "x:0");

  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Tensor::FromVector<float>({1.5f, -2})}};
  RunResult on = RunWith(true, b.graph(), {"z", "y"}, feeds);
  RunResult off = RunWith(false, b.graph(), {"z", "y"}, feeds);
  ExpectSameTensors(on.outputs, off.outputs);
  EXPECT_EQ(on.nodes + 2, off.nodes);
}

// An Identity of a variable's ref is the read (the value at that point of the
// step, not the variable); an Identity of that value is a plain forward.
TEST(IdentityRemoval, AReadOfAVariableStays) {
  GraphDefBuilder b;
  b.Variable("v", DT_FLOAT, TensorShape({}));
  b.Const("one", Tensor::Scalar<float>(1));
  b.Assign("init", "v", "one", DT_FLOAT);
  b.Identity("read", "v", DT_FLOAT);
  b.Identity("copy", "read", DT_FLOAT);  // of a value: removable
  b.Node("neg", "Neg", {"copy"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Remove(g.get()), 1);
  EXPECT_TRUE(Has(*g, "read"));
  EXPECT_FALSE(Has(*g, "copy"));
  EXPECT_EQ(InputOf(*g, "neg"), "read:0");

  RunResult on = RunWith(true, b.graph(), {"neg"}, {}, {"init"});
  RunResult off = RunWith(false, b.graph(), {"neg"}, {}, {"init"});
  ExpectSameTensors(on.outputs, off.outputs);
}

TEST(IdentityRemoval, ControlEdgesKeepTheIdentity) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.NoOp("first");
  b.Identity("gated", "x", DT_FLOAT, {"first"});  // a control input
  b.Identity("signal", "x", DT_FLOAT);
  b.NoOp("after", {"signal"});                     // a control output
  b.Node("n1", "Neg", {"gated"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("n2", "Neg", {"signal"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Remove(g.get()), 0);
  EXPECT_TRUE(Has(*g, "gated"));
  EXPECT_TRUE(Has(*g, "signal"));
}

TEST(IdentityRemoval, AnIdentityWithoutConsumersOrProtectedStays) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Identity("target", "x", DT_FLOAT);
  b.Identity("kept", "x", DT_FLOAT);
  b.Node("n", "Neg", {"kept"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  IdentityRemovalOptions options;
  options.keep = [](const Node* n) { return n->name() == "kept"; };
  EXPECT_EQ(RemoveIdentityChains(options, g.get()), 0);
  EXPECT_TRUE(Has(*g, "target"));
  EXPECT_TRUE(Has(*g, "kept"));
}

// A fetched Identity feeds the fetch's _Send; it stays, and the fetch works.
TEST(IdentityRemoval, AFetchedIdentityStays) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Identity("out", "x", DT_FLOAT);
  GraphDef def = b.graph();
  RunResult on = RunWith(true, def, {"out"}, {{"x", Tensor::Scalar<float>(4)}});
  RunResult off = RunWith(false, def, {"out"}, {{"x", Tensor::Scalar<float>(4)}});
  ExpectSameTensors(on.outputs, off.outputs);
  EXPECT_EQ(on.nodes, off.nodes);
}

TEST(IdentityRemoval, AnIdentityBetweenDevicesStays) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Identity("moved", "x", DT_FLOAT);
  b.Node("n", "Neg", {"moved"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  g->FindNode("x")->set_assigned_device("/job:localhost/replica:0/task:0/device:CPU:0");
  g->FindNode("moved")->set_assigned_device("/job:localhost/replica:0/task:0/device:CPU:1");
  g->FindNode("n")->set_assigned_device("/job:localhost/replica:0/task:0/device:CPU:1");
  EXPECT_EQ(Remove(g.get()), 0);
  EXPECT_TRUE(Has(*g, "moved"));
}

// A loop's body reads its variables through Identities of Switch outputs,
// and a cond's pivots are Identities with control outputs: all stay, and the
// loop computes the same.
TEST(IdentityRemoval, LoopAndCondIdentitiesStay) {
  Graph graph;
  GraphBuilder b(&graph);
  Output limit = b.Scalar<int32_t>("limit", 5);
  Output zero = b.Scalar<int32_t>("zero", 0);
  auto loop = BuildWhileLoop(
      &b, {zero},
      [&](GraphBuilder& g, const std::vector<Output>& v) { return g.Op("less", "Less", {v[0], limit}); },
      [&](GraphBuilder& g, const std::vector<Output>& v) {
        Output copy = g.Op("copy", "Identity", {v[0]});
        return WhileBody{{g.Op("next", "Add", {copy, g.Scalar<int32_t>("two", 2)})}, {}};
      });
  ASSERT_TRUE(loop.ok()) << loop.status();
  auto cond = BuildCond(
      &b, b.Op("pred", "Less", {zero, limit}),
      [&](GraphBuilder& g) { return std::vector<Output>{g.Op("t", "Identity", {limit})}; },
      [&](GraphBuilder& g) { return std::vector<Output>{g.Op("e", "Identity", {zero})}; });
  ASSERT_TRUE(cond.ok()) << cond.status();
  ASSERT_TRUE(b.ok()) << b.status();
  GraphDef def;
  graph.ToGraphDef(&def);
  auto g = MustBuild(def);
  ASSERT_NE(g, nullptr);
  std::vector<std::string> identities;
  for (Node* n : g->nodes()) {
    if (n->type_string() == "Identity") identities.push_back(n->name());
  }
  ASSERT_GE(identities.size(), 3u);
  Remove(g.get());
  for (const std::string& name : identities) EXPECT_TRUE(Has(*g, name)) << name;

  const std::vector<std::string> fetches = {loop->outputs[0].name(), (*cond)[0].name()};
  RunResult on = RunWith(true, def, fetches);
  RunResult off = RunWith(false, def, fetches);
  ExpectSameTensors(on.outputs, off.outputs);
  ASSERT_EQ(on.outputs.size(), 2u);
  EXPECT_EQ(on.outputs[0].scalar<int32_t>(), 6);
  EXPECT_EQ(on.outputs[1].scalar<int32_t>(), 5);
}

}  // namespace
}  // namespace sluice
