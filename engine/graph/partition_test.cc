// Partition, as a spec: which Send/Recv pairs a placed graph gets, what their
// attrs say, which graphs are rejected, and where Recv scheduling puts the
// Recvs' control inputs. Running partitions on two executors is
// engine/runtime/partition_run_test.cc.
#include "engine/graph/partition.h"

#include <map>
#include <set>

#include "engine/framework/op_kernel.h"
#include "engine/framework/rendezvous.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/graph/subgraph.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

constexpr char kA[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kB[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kC[] = "/job:localhost/replica:0/task:0/device:CPU:2";
constexpr int A = 0, B = 1, C = 2;

std::string Attr(const Node* n, const std::string& name) {
  std::string s;
  EXPECT_TRUE(GetNodeAttr(n->def(), name, &s).ok()) << n->name() << " " << name;
  return s;
}

std::vector<const Edge*> ControlInputs(const Node* n) {
  std::vector<const Edge*> out;
  for (const Edge* e : n->in_edges()) {
    if (e->IsControlEdge()) out.push_back(e);
  }
  return out;
}

// The partition survives a round trip through GraphDef with full validation
// (names, attrs, dtypes on edges, frames, shapes) and has no illegal cycle.
void ExpectValid(const Graph& g) {
  EXPECT_TRUE(CheckForIllegalCycles(g).ok());
  GraphDef def;
  g.ToGraphDef(&def);
  auto back = GraphFromGraphDef(def);
  EXPECT_TRUE(back.ok()) << back.status();
}

class PartitionTest : public ::testing::Test {
 protected:
  // Builds `def` and partitions it over devices A, B, C (incarnations 11, 22,
  // 33), each node on `placement[name]` (A when absent).
  absl::Status Split(const GraphDef& def, const std::map<std::string, int>& placement,
                     PartitionOptions options = PartitionOptions()) {
    auto graph = GraphFromGraphDef(def);
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (!graph.ok()) return graph.status();
    graph_ = std::move(graph).value();
    return SplitGraph(placement, std::move(options));
  }
  absl::Status SplitGraph(const std::map<std::string, int>& placement, PartitionOptions options) {
    options.device_names = {kA, kB, kC};
    options.incarnations = {11, 22, 33};
    options.node_device.assign(graph_->num_node_ids(), -1);
    for (Node* n : graph_->nodes()) {
      auto it = placement.find(n->name());
      options.node_device[n->id()] = it == placement.end() ? A : it->second;
    }
    return Partition(options, *graph_, &parts_, &stats_);
  }
  std::vector<Node*> OfOp(int device, const std::string& op) const {
    std::vector<Node*> out;
    if (parts_[device] == nullptr) return out;
    for (Node* n : parts_[device]->nodes()) {
      if (n->type_string() == op) out.push_back(n);
    }
    return out;
  }
  Node* Find(int device, const std::string& name) const {
    Node* n = parts_[device] == nullptr ? nullptr : parts_[device]->FindNode(name);
    EXPECT_NE(n, nullptr) << name << " on device " << device;
    return n;
  }
  // The node feeding data input `i` of `n`.
  static const Node* Input(const Node* n, int i) {
    const Edge* e = n->input_edge(i);
    return e == nullptr ? nullptr : e->src;
  }
  // No cycle (but loop back edges) in the union of the partitions joined
  // Send -> Recv by key.
  bool AcyclicAcrossDevices() const {
    std::map<std::string, std::pair<int, int>> sends;  // key -> (device, id)
    std::vector<int> offset = {0};
    for (const auto& p : parts_) offset.push_back(offset.back() + (p ? p->num_node_ids() : 0));
    std::vector<std::vector<int>> succ(offset.back());
    std::vector<int> pending(offset.back(), 0);
    auto key = [](const Node* n) {
      return absl::StrCat(Attr(n, "send_device"), ";", Attr(n, "recv_device"), ";", Attr(n, "tensor_name"));
    };
    for (size_t d = 0; d < parts_.size(); ++d) {
      if (!parts_[d]) continue;
      for (Node* n : parts_[d]->nodes()) {
        if (!n->IsNextIteration()) {  // loop back edges are legal cycles
          for (const Edge* e : n->out_edges()) succ[offset[d] + n->id()].push_back(offset[d] + e->dst->id());
        }
        if (n->type_string() == "_Send") sends[key(n)] = {static_cast<int>(d), n->id()};
      }
    }
    for (size_t d = 0; d < parts_.size(); ++d) {
      if (!parts_[d]) continue;
      for (Node* n : OfOp(d, "_Recv")) {
        auto it = sends.find(key(n));
        if (it != sends.end()) succ[offset[it->second.first] + it->second.second].push_back(offset[d] + n->id());
      }
    }
    int live = 0;
    std::vector<int> ready;
    for (size_t d = 0; d < parts_.size(); ++d) {
      if (!parts_[d]) continue;
      live += parts_[d]->num_nodes();
    }
    for (auto& s : succ) {
      for (int t : s) ++pending[t];
    }
    for (size_t d = 0; d < parts_.size(); ++d) {
      if (!parts_[d]) continue;
      for (Node* n : parts_[d]->nodes()) {
        if (pending[offset[d] + n->id()] == 0) ready.push_back(offset[d] + n->id());
      }
    }
    int seen = 0;
    while (!ready.empty()) {
      int g = ready.back();
      ready.pop_back();
      ++seen;
      for (int t : succ[g]) {
        if (--pending[t] == 0) ready.push_back(t);
      }
    }
    return seen == live;
  }

  std::unique_ptr<Graph> graph_;
  std::vector<std::unique_ptr<Graph>> parts_;
  PartitionStats stats_;
};

TEST_F(PartitionTest, TensorReadTwiceOnAnotherDeviceCrossesOnce) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2, 3}));
  b.Binary("Mul", "y", x, x, DT_FLOAT);
  b.Identity("z", x, DT_FLOAT);
  ASSERT_TRUE(Split(b.graph(), {{"y", B}, {"z", B}}).ok());
  ASSERT_EQ(OfOp(A, "_Send").size(), 1u);
  ASSERT_EQ(OfOp(B, "_Recv").size(), 1u);
  const Node* recv = OfOp(B, "_Recv")[0];
  EXPECT_EQ(Input(Find(B, "y"), 0), recv);
  EXPECT_EQ(Input(Find(B, "y"), 1), recv);
  EXPECT_EQ(Input(Find(B, "z"), 0), recv);
  EXPECT_EQ(Input(OfOp(A, "_Send")[0], 0), Find(A, "x"));
  EXPECT_EQ(stats_.send_recv_pairs, 1);
  EXPECT_EQ(stats_.control_send_recv_pairs, 0);
  EXPECT_EQ(stats_.cross_edges, (std::map<std::pair<int, int>, int64_t>{{{A, B}, 1}}));
  EXPECT_EQ(stats_.cross_bytes, (std::map<std::pair<int, int>, int64_t>{{{A, B}, 12}}));
  EXPECT_EQ(parts_[C], nullptr) << "no node is placed on C";
}

// A _Recv learns that its consumers order its copy (kOrdersItsInputCopiesAttr,
// a GPU's Stage) only when every consumer on its device says so.
TEST_F(PartitionTest, ARecvIsMarkedWhenEveryConsumerOrdersItsCopy) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2, 3}));
  std::string y = b.Const("y", Tensor::FromVector<float>({4, 5}));
  b.Identity("staged_on_b", x, DT_FLOAT);
  b.Identity("read_on_c", x, DT_FLOAT);
  b.Identity("staged_too", y, DT_FLOAT);
  b.Identity("plain_reader", y, DT_FLOAT);
  for (const char* name : {"staged_on_b", "staged_too"}) {
    (*b.FindNode(name)->mutable_attr())[kOrdersItsInputCopiesAttr] = MakeAttr(true);
  }
  ASSERT_TRUE(
      Split(b.graph(), {{"staged_on_b", B}, {"read_on_c", C}, {"staged_too", C}, {"plain_reader", C}}).ok());
  auto marked = [](const Node* recv) {
    bool value = false;
    return GetNodeAttr(recv->def(), kConsumerOrdersCopyAttr, &value).ok() && value;
  };
  EXPECT_TRUE(marked(Input(Find(B, "staged_on_b"), 0)));
  EXPECT_FALSE(marked(Input(Find(C, "read_on_c"), 0))) << "x's consumer on C makes no promise";
  const Node* y_on_c = Input(Find(C, "staged_too"), 0);
  EXPECT_EQ(y_on_c, Input(Find(C, "plain_reader"), 0)) << "one pair per tensor and device";
  EXPECT_FALSE(marked(y_on_c)) << "one of y's consumers on C makes no promise";
  for (int d : {B, C}) ExpectValid(*parts_[d]);
}

TEST_F(PartitionTest, ReadsOnTwoDevicesGiveTwoPairs) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2, 3}));
  b.Identity("on_b", x, DT_FLOAT);
  b.Identity("on_c", x, DT_FLOAT);
  ASSERT_TRUE(Split(b.graph(), {{"on_b", B}, {"on_c", C}}).ok());
  EXPECT_EQ(OfOp(A, "_Send").size(), 2u);
  ASSERT_EQ(OfOp(B, "_Recv").size(), 1u);
  ASSERT_EQ(OfOp(C, "_Recv").size(), 1u);
  EXPECT_EQ(Attr(OfOp(B, "_Recv")[0], "recv_device"), kB);
  EXPECT_EQ(Attr(OfOp(C, "_Recv")[0], "recv_device"), kC);
  EXPECT_NE(Attr(OfOp(B, "_Recv")[0], "tensor_name"), Attr(OfOp(C, "_Recv")[0], "tensor_name"));
  EXPECT_EQ(stats_.send_recv_pairs, 2);
  EXPECT_EQ(stats_.cross_edges, (std::map<std::pair<int, int>, int64_t>{{{A, B}, 1}, {{A, C}, 1}}));
}

TEST_F(PartitionTest, EachOutputOfANodeCrossesInItsOwnPair) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2, 3, 4}));
  std::string pred = b.Const("pred", Tensor::Scalar<bool>(true));
  std::string sw = b.Switch("sw", x, pred, DT_FLOAT);
  b.Identity("false_branch", sw + ":0", DT_FLOAT);
  b.Identity("true_branch", sw + ":1", DT_FLOAT);
  ASSERT_TRUE(Split(b.graph(), {{"false_branch", B}, {"true_branch", B}}).ok());
  EXPECT_EQ(OfOp(B, "_Recv").size(), 2u);
  const Node* f = Input(Find(B, "false_branch"), 0);
  const Node* t = Input(Find(B, "true_branch"), 0);
  EXPECT_NE(f, t);
  EXPECT_EQ(f->type_string(), "_Recv");
  EXPECT_EQ(t->type_string(), "_Recv");
  // Statically unknown size: counted, no bytes.
  EXPECT_EQ(stats_.cross_edges.at({A, B}), 2);
  EXPECT_EQ(stats_.cross_bytes.at({A, B}), 0);
}

TEST_F(PartitionTest, ControlEdgeCrossesAsADummyConstAndAControlEdgeIntoDst) {
  GraphDefBuilder b;
  std::string a = b.Const("a", Tensor::Scalar<float>(1));
  b.NoOp("after_a", {a});
  b.NoOp("also_after_a", {a});
  ASSERT_TRUE(Split(b.graph(), {{"after_a", B}, {"also_after_a", B}}).ok());
  // On A: a -> (control) dummy Const -> _Send.
  ASSERT_EQ(OfOp(A, "_Send").size(), 1u);
  const Node* dummy = Input(OfOp(A, "_Send")[0], 0);
  ASSERT_NE(dummy, nullptr);
  EXPECT_EQ(dummy->type_string(), "Const");
  ASSERT_EQ(ControlInputs(dummy).size(), 1u);
  EXPECT_EQ(ControlInputs(dummy)[0]->src, Find(A, "a"));
  // On B: one _Recv with a control edge into each dst.
  ASSERT_EQ(OfOp(B, "_Recv").size(), 1u);
  const Node* recv = OfOp(B, "_Recv")[0];
  for (const char* dst : {"after_a", "also_after_a"}) {
    ASSERT_EQ(ControlInputs(Find(B, dst)).size(), 1u);
    EXPECT_EQ(ControlInputs(Find(B, dst))[0]->src, recv);
  }
  EXPECT_EQ(stats_.send_recv_pairs, 0);
  EXPECT_EQ(stats_.control_send_recv_pairs, 1);
  ExpectValid(*parts_[A]);
  ExpectValid(*parts_[B]);
}

TEST_F(PartitionTest, SendAndRecvKeysMatch) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2}));
  std::string i = b.Const("i", Tensor::Scalar<int32_t>(7));
  b.Identity("xb", x, DT_FLOAT, {i});
  b.Identity("ib", i, DT_INT32);
  b.Identity("xc", x, DT_FLOAT);
  ASSERT_TRUE(Split(b.graph(), {{"xb", B}, {"ib", B}, {"xc", C}}).ok());
  std::map<std::string, const Node*> recvs;  // tensor_name -> Recv
  for (int d : {B, C}) {
    for (const Node* r : OfOp(d, "_Recv")) {
      EXPECT_TRUE(recvs.emplace(Attr(r, "tensor_name"), r).second) << "tensor_name reused";
    }
  }
  std::set<std::string> keys;
  const std::vector<Node*> sends = OfOp(A, "_Send");
  ASSERT_EQ(sends.size(), 4u);  // x to B, i to B, ^i to B, x to C
  for (const Node* s : sends) {
    auto it = recvs.find(Attr(s, "tensor_name"));
    ASSERT_NE(it, recvs.end()) << s->name();
    const Node* r = it->second;
    for (const char* attr : {"send_device", "recv_device", "tensor_name"}) EXPECT_EQ(Attr(s, attr), Attr(r, attr));
    int64_t s_inc = 0, r_inc = 0;
    ASSERT_TRUE(GetNodeAttr(s->def(), "send_device_incarnation", &s_inc).ok());
    ASSERT_TRUE(GetNodeAttr(r->def(), "send_device_incarnation", &r_inc).ok());
    EXPECT_EQ(s_inc, 11);
    EXPECT_EQ(r_inc, 11);
    bool s_client = true, r_client = true;
    ASSERT_TRUE(GetNodeAttr(s->def(), "client_terminated", &s_client).ok());
    ASSERT_TRUE(GetNodeAttr(r->def(), "client_terminated", &r_client).ok());
    EXPECT_FALSE(s_client);
    EXPECT_FALSE(r_client);
    DataType t, tensor_type;
    ASSERT_TRUE(GetNodeAttr(s->def(), "T", &t).ok());
    ASSERT_TRUE(GetNodeAttr(r->def(), "tensor_type", &tensor_type).ok());
    EXPECT_EQ(t, tensor_type);
    EXPECT_EQ(Attr(s, "send_device"), kA);
    EXPECT_EQ(s->assigned_device(), kA);
    EXPECT_EQ(r->assigned_device(), Attr(r, "recv_device"));
    keys.insert(Rendezvous::CreateKey(Attr(s, "send_device"), s_inc, Attr(s, "recv_device"), Attr(s, "tensor_name")));
  }
  EXPECT_EQ(keys.size(), sends.size());
}

TEST_F(PartitionTest, NodesKeepTheirNamesAndGetTheFullDeviceName) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::Scalar<float>(1));
  b.Identity("y", x, DT_FLOAT);
  ASSERT_TRUE(Split(b.graph(), {{"y", B}}).ok());
  EXPECT_EQ(Find(A, "x")->def().device(), kA);
  EXPECT_EQ(Find(A, "x")->assigned_device(), kA);
  EXPECT_EQ(Find(B, "y")->def().device(), kB);
  EXPECT_EQ(Find(B, "y")->assigned_device(), kB);
  EXPECT_EQ(parts_[A]->FindNode("y"), nullptr);
  EXPECT_EQ(parts_[B]->FindNode("x"), nullptr);
}

TEST_F(PartitionTest, AddedNodesStepAroundNamesTheGraphAlreadyHas) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::Scalar<float>(1));
  b.Identity("y", x, DT_FLOAT);
  // The names Partition would give x:0's _Send (on A) and _Recv (on B).
  b.Const("x/_0/_send_to_1", Tensor::Scalar<float>(2));
  b.Const("x/_0/_recv_from_0", Tensor::Scalar<float>(3));
  ASSERT_TRUE(Split(b.graph(), {{"y", B}, {"x/_0/_recv_from_0", B}}).ok());
  ASSERT_EQ(OfOp(A, "_Send").size(), 1u);
  ASSERT_EQ(OfOp(B, "_Recv").size(), 1u);
  EXPECT_EQ(OfOp(A, "_Send")[0]->name(), "x/_0/_send_to_1_1");
  EXPECT_EQ(OfOp(B, "_Recv")[0]->name(), "x/_0/_recv_from_0_1");
  EXPECT_EQ(Find(A, "x/_0/_send_to_1")->type_string(), "Const");
  EXPECT_EQ(Find(B, "x/_0/_recv_from_0")->type_string(), "Const");
  ExpectValid(*parts_[A]);
  ExpectValid(*parts_[B]);
}

TEST_F(PartitionTest, CastHookSendsFloatsAsBfloat16) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2, 3}));
  std::string i = b.Const("i", Tensor::FromVector<int32_t>({1, 2, 3}));
  b.Identity("xb", x, DT_FLOAT);
  b.Identity("ib", i, DT_INT32);
  PartitionOptions options;
  options.should_cast = [](const Edge*) { return true; };
  ASSERT_TRUE(Split(b.graph(), {{"xb", B}, {"ib", B}}, options).ok());
  ASSERT_EQ(OfOp(A, "Cast").size(), 1u) << "only the float edge is cast";
  ASSERT_EQ(OfOp(B, "Cast").size(), 1u);
  const Node* down = OfOp(A, "Cast")[0];
  EXPECT_EQ(Input(down, 0), Find(A, "x"));
  EXPECT_EQ(down->output_type(0), DT_BFLOAT16);
  const Node* up = OfOp(B, "Cast")[0];
  EXPECT_EQ(Input(Find(B, "xb"), 0), up);
  EXPECT_EQ(up->output_type(0), DT_FLOAT);
  const Node* recv = Input(up, 0);
  ASSERT_EQ(recv->type_string(), "_Recv");
  EXPECT_EQ(recv->output_type(0), DT_BFLOAT16);
  EXPECT_EQ(Input(Find(B, "ib"), 0)->type_string(), "_Recv");
  // 3 bfloat16 (6 bytes) and 3 int32 (12 bytes).
  EXPECT_EQ(stats_.cross_bytes.at({A, B}), 18);
  ExpectValid(*parts_[A]);
  ExpectValid(*parts_[B]);
}

TEST_F(PartitionTest, ReferenceEdgeAcrossDevicesIsAnError) {
  GraphDefBuilder b;
  std::string v = b.Variable("v", DT_FLOAT, TensorShape({}));
  std::string one = b.Const("one", Tensor::Scalar<float>(1));
  b.Assign("assign", v, one, DT_FLOAT);
  absl::Status s = Split(b.graph(), {{"assign", B}, {"one", B}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("'v'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'assign'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("reference"), std::string::npos) << s;
}

TEST_F(PartitionTest, AVariableReadOnAnotherDeviceSendsItsValueType) {
  GraphDefBuilder b;
  std::string v = b.Variable("v", DT_FLOAT, TensorShape({}));
  b.Identity("read", v, DT_FLOAT);
  ASSERT_TRUE(Split(b.graph(), {{"read", B}}).ok());
  ASSERT_EQ(OfOp(A, "_Send").size(), 1u);
  DataType t;
  ASSERT_TRUE(GetNodeAttr(OfOp(A, "_Send")[0]->def(), "T", &t).ok());
  EXPECT_EQ(t, DT_FLOAT);
  ExpectValid(*parts_[A]);
  ExpectValid(*parts_[B]);
}

// i = 0; while (i < limit) i += 1; with limit from `limit` and the loop's nodes
// named "loop/...".
void CountingLoop(GraphDefBuilder* b, const std::string& limit) {
  std::string zero = b->Const("zero", Tensor::Scalar<int32_t>(0));
  std::string one = b->Const("one", Tensor::Scalar<int32_t>(1));
  std::string limit_e = b->Enter("loop/limit_e", limit, DT_INT32, "loop", true);
  std::string one_e = b->Enter("loop/one_e", one, DT_INT32, "loop", true);
  std::string i_e = b->Enter("loop/i_e", zero, DT_INT32, "loop");
  std::string i_m = b->Merge("loop/i_m", {i_e, "loop/i_next"}, DT_INT32);
  std::string cond = b->LoopCond("loop/cond", b->Binary("Less", "loop/less", i_m, limit_e, DT_INT32));
  std::string sw = b->Switch("loop/sw", i_m, cond, DT_INT32);
  b->Exit("loop/exit", sw + ":0", DT_INT32);
  std::string body = b->Identity("loop/body", sw + ":1", DT_INT32);
  b->NextIteration("loop/i_next", b->Binary("Add", "loop/add", body, one_e, DT_INT32), DT_INT32);
}

TEST_F(PartitionTest, LoopSpanningDevicesIsAnError) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(5));
  CountingLoop(&b, limit);
  absl::Status s = Split(b.graph(), {{"loop/add", B}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("loops that span devices are not supported yet: "), std::string::npos) << s;
  EXPECT_NE(s.message().find("'loop/add'"), std::string::npos) << s;
  EXPECT_TRUE(parts_.empty()) << "no partial result";
}

TEST_F(PartitionTest, ALoopOnOneDeviceMayTakeAndGiveValuesAcrossDevices) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(5));
  CountingLoop(&b, limit);
  b.Identity("result", "loop/exit", DT_INT32);
  std::map<std::string, int> placement = {{"zero", B}, {"one", B}};
  for (const char* n : {"limit_e", "one_e", "i_e", "i_m", "less", "cond", "sw", "exit", "body", "add", "i_next"}) {
    placement[std::string("loop/") + n] = B;
  }
  ASSERT_TRUE(Split(b.graph(), placement).ok());
  // limit (A) -> Enter (B) and Exit (B) -> result (A) cross in the root frame.
  EXPECT_EQ(Input(Find(B, "loop/limit_e"), 0)->type_string(), "_Recv");
  EXPECT_EQ(Input(Find(A, "result"), 0)->type_string(), "_Recv");
  EXPECT_EQ(stats_.send_recv_pairs, 2);
  ExpectValid(*parts_[A]);
  ExpectValid(*parts_[B]);
  EXPECT_TRUE(AcyclicAcrossDevices());
}

TEST_F(PartitionTest, ClientTerminatedFeedsAndFetchesStayAsTheyAre) {
  GraphDefBuilder b;
  std::string x = b.Placeholder("x", DT_FLOAT);
  std::string y = b.Identity("y", x, DT_FLOAT);
  b.Identity("z", y, DT_FLOAT);
  auto graph = GraphFromGraphDef(b.graph());
  ASSERT_TRUE(graph.ok()) << graph.status();
  graph_ = std::move(graph).value();
  RewriteOptions rewrite;
  rewrite.device_name = kA;
  RewriteResult result;
  ASSERT_TRUE(RewriteGraphForExecution(rewrite, {"x:0"}, {"z:0"}, {}, graph_.get(), &result).ok());
  std::map<std::string, int> placement = {{"y", B}, {"z", B}};
  std::map<std::string, NodeDef> client_nodes;
  for (Node* n : graph_->nodes()) {
    if (n->type_string() == "_Send") placement[n->name()] = B;  // the fetch sits with z
    if (n->type_string() == "_Send" || n->type_string() == "_Recv") client_nodes[n->name()] = n->def();
  }
  ASSERT_EQ(client_nodes.size(), 2u);
  ASSERT_TRUE(SplitGraph(placement, PartitionOptions()).ok());
  for (const auto& [name, def] : client_nodes) {
    const int d = placement.count(name) ? placement[name] : A;
    const Node* n = Find(d, name);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->def().attr().size(), def.attr().size());
    for (const auto& [attr, value] : def.attr()) {
      EXPECT_EQ(n->def().attr().at(attr).SerializeAsString(), value.SerializeAsString()) << name << " " << attr;
    }
  }
  // The fed value crosses A -> B in a pair of its own.
  EXPECT_EQ(stats_.send_recv_pairs, 1);
  // Feed and fetch names start with '_', which a GraphDef may not use, so
  // only the cycle check applies.
  EXPECT_TRUE(CheckForIllegalCycles(*parts_[A]).ok());
  EXPECT_TRUE(CheckForIllegalCycles(*parts_[B]).ok());
  EXPECT_TRUE(AcyclicAcrossDevices());
}

TEST_F(PartitionTest, EveryPartitionOfAMixedGraphValidates) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2, 3}));
  std::string y = b.Binary("Mul", "y", x, x, DT_FLOAT);
  std::string z = b.Binary("Add", "z", y, x, DT_FLOAT);
  std::string w = b.Binary("Sub", "w", z, y, DT_FLOAT);
  b.NoOp("done", {w, z});
  b.Identity("c_copy", w, DT_FLOAT, {x});
  PartitionOptions options;
  options.should_cast = [](const Edge* e) { return e->dst->name() == "w"; };
  ASSERT_TRUE(Split(b.graph(), {{"y", B}, {"w", B}, {"c_copy", C}, {"done", C}}, options).ok());
  for (const auto& p : parts_) {
    ASSERT_NE(p, nullptr);
    ExpectValid(*p);
  }
  EXPECT_TRUE(AcyclicAcrossDevices());
}

TEST_F(PartitionTest, MalformedOptionsAreInvalidArgument) {
  GraphDefBuilder b;
  b.Const("x", Tensor::Scalar<float>(1));
  auto graph = GraphFromGraphDef(b.graph());
  ASSERT_TRUE(graph.ok());
  PartitionOptions options;
  options.device_names = {kA};
  options.incarnations = {1};
  options.node_device = {};
  EXPECT_EQ(Partition(options, **graph, &parts_, nullptr).code(), absl::StatusCode::kInvalidArgument);
  options.node_device = {1};
  absl::Status s = Partition(options, **graph, &parts_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s;
  options.node_device = {0};
  options.incarnations = {};
  EXPECT_EQ(Partition(options, **graph, &parts_, nullptr).code(), absl::StatusCode::kInvalidArgument);
  options.incarnations = {1};
  EXPECT_TRUE(Partition(options, **graph, &parts_, nullptr).ok());
  ASSERT_EQ(parts_.size(), 1u);
  EXPECT_EQ(parts_[0]->num_nodes(), 1);
}

// Recv scheduling (§5.2).

// On B: c0 -> c1 -> ... -> c12 -> use, and use also reads x from A.
GraphDef LateConsumer(std::map<std::string, int>* placement) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::Scalar<float>(2));
  std::string c = b.Const("c0", Tensor::Scalar<float>(1));
  (*placement)["c0"] = B;
  for (int i = 1; i <= 12; ++i) {
    c = b.Identity("c" + std::to_string(i), c, DT_FLOAT);
    (*placement)[c] = B;
  }
  b.Binary("Add", "use", c, x, DT_FLOAT);
  (*placement)["use"] = B;
  return b.graph();
}

TEST_F(PartitionTest, AlapRecvWaitsForTheChainBeforeItsLateConsumer) {
  std::map<std::string, int> placement;
  GraphDef def = LateConsumer(&placement);
  ASSERT_TRUE(Split(def, placement).ok());
  ASSERT_EQ(OfOp(B, "_Recv").size(), 1u);
  const Node* recv = OfOp(B, "_Recv")[0];
  ASSERT_EQ(recv->in_edges().size(), 1u) << "one control input, no longer a root";
  ASSERT_TRUE(recv->in_edges()[0]->IsControlEdge());
  // use starts at 13 (unit costs), so the Recv starts at 12, after c11.
  EXPECT_EQ(recv->in_edges()[0]->src->name(), "c11");
  EXPECT_EQ(stats_.recvs_scheduled, 1);
  ExpectValid(*parts_[B]);
  EXPECT_TRUE(AcyclicAcrossDevices());
}

TEST_F(PartitionTest, WithoutAlapRecvsStayRoots) {
  std::map<std::string, int> placement;
  GraphDef def = LateConsumer(&placement);
  PartitionOptions options;
  options.schedule_recvs_alap = false;
  ASSERT_TRUE(Split(def, placement, options).ok());
  ASSERT_EQ(OfOp(B, "_Recv").size(), 1u);
  EXPECT_TRUE(OfOp(B, "_Recv")[0]->in_edges().empty());
  EXPECT_EQ(stats_.recvs_scheduled, 0);
}

// A Recv is never gated on a node that depends on it through another device:
// here r (x from A) feeds y on B, y goes to A and comes back to B as w, which
// starts a long chain. Scheduling B alone, w's chain would look independent of
// r and one of its nodes would become r's control input: a deadlock.
TEST_F(PartitionTest, AlapNeverGatesARecvOnItsOwnDescendantOnAnotherDevice) {
  GraphDefBuilder b;
  std::map<std::string, int> placement;
  std::string x = b.Const("x", Tensor::Scalar<float>(2));
  std::string c = b.Const("c0", Tensor::Scalar<float>(1));
  placement[c] = B;
  for (int i = 1; i <= 9; ++i) placement[c = b.Identity("c" + std::to_string(i), c, DT_FLOAT)] = B;
  placement[b.Binary("Add", "y", c, x, DT_FLOAT)] = B;
  b.Identity("z", "y", DT_FLOAT);  // on A
  std::string w = b.Identity("w0", "z", DT_FLOAT);
  placement[w] = B;
  for (int i = 1; i <= 20; ++i) placement[w = b.Identity("w" + std::to_string(i), w, DT_FLOAT)] = B;
  ASSERT_TRUE(Split(b.graph(), placement).ok());
  EXPECT_TRUE(AcyclicAcrossDevices());
  for (const Node* r : OfOp(B, "_Recv")) {
    for (const Edge* e : r->in_edges()) {
      EXPECT_NE(e->src->name()[0], 'w') << r->name() << " waits for its own descendant " << e->src->name();
    }
  }
  ExpectValid(*parts_[A]);
  ExpectValid(*parts_[B]);
}

// A node after a Switch may be dead; a Recv gated on it would be dead too.
TEST_F(PartitionTest, AlapNeverGatesARecvOnAMaybeDeadNode) {
  GraphDefBuilder b;
  std::map<std::string, int> placement;
  std::string x = b.Const("x", Tensor::Scalar<float>(2));
  std::string c = b.Const("c", Tensor::Scalar<float>(1));
  std::string pred = b.Const("pred", Tensor::Scalar<bool>(true));
  std::string t = b.Switch("sw", c, pred, DT_FLOAT) + ":1";
  placement["c"] = placement["pred"] = placement["sw"] = B;
  for (int i = 1; i <= 10; ++i) placement[t = b.Identity("t" + std::to_string(i), t, DT_FLOAT)] = B;
  placement[b.Binary("Add", "use", t, x, DT_FLOAT)] = B;
  ASSERT_TRUE(Split(b.graph(), placement).ok());
  ASSERT_EQ(OfOp(B, "_Recv").size(), 1u);
  for (const Edge* e : OfOp(B, "_Recv")[0]->in_edges()) {
    EXPECT_TRUE(e->src->name() == "c" || e->src->name() == "pred") << e->src->name();
  }
}

TEST_F(PartitionTest, AlapLeavesLoopNodesOutAndKeepsLoopGraphsValid) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(5));
  CountingLoop(&b, limit);
  std::string after = b.Identity("after", "loop/exit", DT_INT32);
  std::string d = b.Identity("d0", after, DT_INT32);
  for (int i = 1; i <= 5; ++i) d = b.Identity("d" + std::to_string(i), d, DT_INT32);
  std::string late = b.Const("late", Tensor::Scalar<int32_t>(1));
  b.Binary("Add", "sum", d, late, DT_INT32);
  // Everything on B but `late`.
  std::map<std::string, int> placement;
  GraphDef def = b.graph();
  for (const NodeDef& n : def.node()) placement[n.name()] = n.name() == "late" ? A : B;
  ASSERT_TRUE(Split(def, placement).ok());
  ASSERT_EQ(OfOp(B, "_Recv").size(), 1u);
  // Every candidate after the loop descends from its Exit; before it, only
  // root-frame nodes qualify.
  for (const Edge* e : OfOp(B, "_Recv")[0]->in_edges()) {
    EXPECT_EQ(e->src->name().find("loop/"), std::string::npos) << e->src->name();
    EXPECT_NE(e->src->name(), "after");
  }
  ExpectValid(*parts_[B]);
  EXPECT_TRUE(AcyclicAcrossDevices());
}

}  // namespace
}  // namespace sluice
