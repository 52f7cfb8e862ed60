// Malformed GraphDefs: every one is rejected by Session::Create, before any
// kernel is built or run, with an InvalidArgument message that names the node.
//
// The cases are generated, not written out. Three valid base graphs
//   arith: Consts, a Placeholder, MatMul, Add, Mul, Less, LogicalNot, NoOp;
//   var:   a VariableV2 with Assign and AssignAdd (Ref edges, control inputs);
//   loop:  a while loop summing 1..3 (Enter, Merge, Switch, LoopCond,
//          NextIteration, Exit), as in engine/runtime/control_flow_test.cc;
// each get every applicable defect applied to every applicable node (one
// variant per node, variants rotating over the nodes), plus defects specific to
// one base (shape and frame errors), and then pairs of defects of different
// kinds on different nodes. The defects:
//   unknown op; unknown attr; missing attr; attr of the wrong kind; a type attr
//   with a disallowed (T of Add = bool) or unsupported (invalid, a ref) type;
//   an int attr below its minimum (N of Merge); dangling input names (data and
//   control); duplicate node names; invalid node names (empty, spaces, ':',
//   '^', a leading '_' or '-'...); bad ports (port == number of outputs, "a:x",
//   "a:-1", "a:", "^a:0"); too few and too many data inputs; a control input
//   before a data input; cycles that do not pass through NextIteration (self
//   loops, data and control back edges); dtype mismatches on edges (a type attr
//   flipped, an input rewired to a Const of another type, a plain value into
//   the Ref input of Assign/AssignAdd); frame errors (Exit or NextIteration
//   outside a loop, a NextIteration feeding a non-Merge, a node fed from two
//   frames, Enter with an empty frame_name, an Enter re-entering its own
//   frame); malformed Const values (tensor_content of the wrong size, dtype
//   attr differing from the tensor's, negative dims, more typed values than
//   elements, a shape whose byte size overflows); bad shape attrs (negative
//   dims, unknown rank with dims); shape errors (MatMul inner dims, MatMul of a
//   vector, Add of [2] and [3], Assign/AssignAdd of the wrong shape, a
//   non-scalar LoopCond or Switch predicate); and (issue 22) shapes no tensor
//   may have: zero-then-huge dims ([0, 2^62, 4], where the product of the
//   non-zero dims overflows) in Const values and shape attrs, shape attrs of
//   more than 2^62 elements, Placeholder dims >= 2^31 used as the rank of a
//   Fill or Reshape output, a MatMul output of [2^40, 2^40]; and small
//   NodeDefs that would allocate a lot (a Const of 2^28 floats from one
//   value, an AddN with N = 2^20).
//
// MALFORMED_GRAPH_TEST_VERBOSE=1 (bazel test --test_env=...) prints every case
// with the status Create returned.
//
// For every case: Create returns InvalidArgument; the message names, in quotes,
// the node the mutation targeted (for a pair, one of the two; for a cycle, a
// node on it; for a node with an empty name, its position in the GraphDef); a
// later Run fails with FailedPrecondition "Run called before Create"; and no
// TestCountingIdentity kernel (a test op placed in every base graph, whose
// constructor and Compute bump global counters) was built or run. The unmutated
// base graphs are checked to be accepted and to run with the counters moving,
// so a validator that rejects everything cannot pass. Failure messages carry the
// case name, e.g. "base=loop mutation=dangling_input node=i_m (input 0 ...)".
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/framework/tensor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {

// ---- A kernel that counts its construction and its runs -------------------

std::atomic<int64_t> g_counting_kernels_built{0};
std::atomic<int64_t> g_counting_kernels_run{0};

REGISTER_OP("TestCountingIdentity").Input("x: T").Output("y: T").Attr("T: type").SetShapeFn(shape_fns::Unchanged);

class TestCountingIdentityOp : public OpKernel {
 public:
  explicit TestCountingIdentityOp(OpKernelConstruction* ctx) : OpKernel(ctx) { g_counting_kernels_built.fetch_add(1); }
  void Compute(OpKernelContext* ctx) override {
    g_counting_kernels_run.fetch_add(1);
    ctx->set_output(0, ctx->input(0));
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("TestCountingIdentity").Device(kDeviceCpu), TestCountingIdentityOp);

namespace {

constexpr char kContainer[] = "malformed_graph_test";
constexpr char kCountingOp[] = "TestCountingIdentity";

// ---- GraphDef helpers -------------------------------------------------------

bool IsControlInput(const std::string& input) { return !input.empty() && input[0] == '^'; }

// The node part of an input: "^a" -> "a", "a:1" -> "a", "a" -> "a".
std::string InputNode(const std::string& input) {
  std::string s = IsControlInput(input) ? input.substr(1) : input;
  size_t colon = s.rfind(':');
  return colon == std::string::npos ? s : s.substr(0, colon);
}

int InputPort(const std::string& input) {
  size_t colon = input.rfind(':');
  return colon == std::string::npos ? 0 : std::stoi(input.substr(colon + 1));
}

const NodeDef* FindNodeDef(const GraphDef& graph, const std::string& name) {
  for (const NodeDef& n : graph.node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

// The first node called `name`. A missing node is a bug in this test.
NodeDef* MustFind(GraphDef* graph, const std::string& name) {
  for (NodeDef& n : *graph->mutable_node()) {
    if (n.name() == name) return &n;
  }
  CHECK(false) << "test bug: no node '" << name << "' to mutate";
  return nullptr;
}

// Positions (in node.input()) of the data inputs.
std::vector<int> DataInputPositions(const NodeDef& node) {
  std::vector<int> out;
  for (int i = 0; i < node.input_size(); ++i) {
    if (!IsControlInput(node.input(i))) out.push_back(i);
  }
  return out;
}

const OpDef& OpOf(const NodeDef& node) {
  const OpDef* op = OpRegistry::Global()->LookUp(node.op());
  CHECK(op != nullptr) << "test bug: base graph uses unknown op " << node.op();
  return *op;
}

struct Signature {
  DataTypeVector inputs;
  DataTypeVector outputs;
};

Signature SignatureOf(const NodeDef& def) {
  NodeDef copy = def;
  const OpDef& op = OpOf(def);
  Signature sig;
  absl::Status s = AddDefaultsAndValidateAttrs(op, &copy);
  CHECK(s.ok()) << s;
  s = InOutTypesForNode(copy, op, &sig.inputs, &sig.outputs);
  CHECK(s.ok()) << s;
  return sig;
}

// Attr names of `node`, sorted (proto maps iterate in no fixed order).
std::vector<std::string> AttrNames(const NodeDef& node) {
  std::vector<std::string> names;
  for (const auto& [name, value] : node.attr()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

bool Compatible(DataType src, DataType dst) { return src == dst || (IsRefType(src) && BaseType(src) == dst); }

// Consumers of each node along edges that a legal cycle could not use: edges
// out of NextIteration nodes (loop back edges) are left out.
std::map<std::string, std::vector<std::string>> ForwardEdges(const GraphDef& graph) {
  std::map<std::string, std::vector<std::string>> out;
  for (const NodeDef& n : graph.node()) {
    for (const std::string& in : n.input()) {
      const NodeDef* src = FindNodeDef(graph, InputNode(in));
      if (src == nullptr || src->op() == "NextIteration") continue;
      out[src->name()].push_back(n.name());
    }
  }
  return out;
}

// Nodes reachable from `from` in one or more steps of `edges`, in BFS order.
std::vector<std::string> Reachable(const std::map<std::string, std::vector<std::string>>& edges,
                                   const std::string& from) {
  std::vector<std::string> order;
  std::set<std::string> seen;
  std::vector<std::string> frontier = {from};
  while (!frontier.empty()) {
    std::vector<std::string> next;
    for (const std::string& n : frontier) {
      auto it = edges.find(n);
      if (it == edges.end()) continue;
      for (const std::string& d : it->second) {
        if (seen.insert(d).second) {
          order.push_back(d);
          next.push_back(d);
        }
      }
    }
    frontier = std::move(next);
  }
  return order;
}

// ---- Mutations and cases ----------------------------------------------------

std::string Quoted(const std::string& name) { return absl::StrCat("'", name, "'"); }

struct Mutation {
  std::string kind;    // e.g. "dangling_input"
  std::string node;    // the node it targets, named as in the base graph
  std::string detail;  // what it changes, for the case name
  // The error message must contain one of these (quoted node names, or the
  // position of an unnamed node).
  std::vector<std::string> expect;
  // Nodes whose NodeDefs it edits (pairs of mutations edit disjoint sets).
  std::set<std::string> edits;
  std::function<void(GraphDef*)> apply;
};

Mutation MakeMutation(std::string kind, const std::string& node, std::string detail,
                      std::function<void(GraphDef*)> apply) {
  Mutation m;
  m.kind = std::move(kind);
  m.node = node;
  m.detail = std::move(detail);
  m.expect = {Quoted(node)};
  m.edits = {node};
  m.apply = std::move(apply);
  return m;
}

struct Case {
  std::string base;
  std::vector<Mutation> mutations;  // one, or a pair
  GraphDef graph;
  std::string fetch;  // for the Run that must fail
};

// "base=loop mutation=dangling_input node=i_m (input 0 'i_e' -> 'i_e_typo')".
std::string CaseName(const std::string& base, const std::vector<Mutation>& mutations) {
  std::vector<std::string> parts;
  for (const Mutation& m : mutations) {
    parts.push_back(absl::StrCat("mutation=", m.kind, " node=", m.node, m.detail.empty() ? "" : " (", m.detail,
                                 m.detail.empty() ? "" : ")"));
  }
  return absl::StrCat("base=", base, " ", absl::StrJoin(parts, " + "));
}

std::string CaseName(const Case& c) { return CaseName(c.base, c.mutations); }

struct BaseGraph {
  std::string name;
  GraphDef graph;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  // Checks the fetched values of a successful run.
  std::function<void(const std::vector<Tensor>&)> check_outputs;
  int64_t counting_runs_per_step = 0;
  // Defects that only make sense for this base (shapes, frames).
  std::vector<Mutation> specific;
};

// Sets the value (and dtype attr) of Const `name`.
void SetConst(GraphDef* g, const std::string& name, const Tensor& value) {
  NodeDef* n = MustFind(g, name);
  (*n->mutable_attr())["value"] = MakeAttr(value);
  (*n->mutable_attr())["dtype"] = MakeAttr(value.dtype());
}

Tensor FloatTensor(std::vector<float> values, const TensorShape& shape) {
  return Tensor::FromVector<float>(absl::MakeConstSpan(values), shape);
}

// A float or int32 Const appended to the graph, for rewiring inputs to.
std::string AddScalarConst(GraphDef* g, const std::string& name, DataType dtype) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op("Const");
  Tensor t = dtype == DT_FLOAT ? Tensor::Scalar<float>(1.5f) : Tensor::Scalar<int32_t>(7);
  (*n->mutable_attr())["value"] = MakeAttr(t);
  (*n->mutable_attr())["dtype"] = MakeAttr(t.dtype());
  return name;
}

// A node appended to the graph (for defects that add a node).
void AddNode(GraphDef* g, const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
             const std::map<std::string, AttrValue>& attrs) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  for (const auto& [k, v] : attrs) (*n->mutable_attr())[k] = v;
}

// A different kind of attr value than `current`, chosen by `salt`.
AttrValue OtherKind(const AttrValue& current, int salt) {
  std::vector<AttrValue> candidates;
  candidates.push_back(MakeAttr(int64_t{7}));
  candidates.push_back(MakeAttr("not a type"));
  candidates.push_back(MakeAttr(2.5f));
  candidates.push_back(MakeAttr(true));
  candidates.push_back(MakeAttr(DT_FLOAT));
  candidates.push_back(MakeAttr(TensorShape({2, 2})));
  candidates.push_back(MakeAttr(std::vector<int64_t>{1, 2}));
  candidates.push_back(AttrValue());  // no value at all
  for (size_t k = 0; k < candidates.size(); ++k) {
    const AttrValue& v = candidates[(salt + k) % candidates.size()];
    if (AttrValueKindName(v) != AttrValueKindName(current)) return v;
  }
  return AttrValue();
}

// ---- Generic defects, applied to every applicable node -----------------------

class Generator {
 public:
  explicit Generator(const GraphDef& base) : base_(base), forward_(ForwardEdges(base)) {
    for (const auto& [src, dsts] : forward_) {
      for (const std::string& d : dsts) backward_[d].push_back(src);
    }
  }

  std::vector<Mutation> All() {
    for (int k = 0; k < base_.node_size(); ++k) {
      const NodeDef& n = base_.node(k);
      UnknownOp(n);
      UnknownAttr(n);
      MissingAttr(n, k);
      AttrWrongKind(n, k);
      BadTypeAttr(n, k);
      BelowMinimum(n);
      Dangling(n, k);
      Duplicate(n);
      InvalidName(n, k);
      BadPort(n, k);
      TooFewInputs(n);
      TooManyInputs(n);
      ControlBeforeData(n);
      DtypeMismatch(n, k);
      Cycles(n, k);
      ConstValue(n, k);
      ShapeAttr(n);
    }
    return std::move(out_);
  }

 private:
  void Add(Mutation m) { out_.push_back(std::move(m)); }

  void UnknownOp(const NodeDef& n) {
    std::string op = n.op() + "Typo";
    std::string name = n.name();
    Add(MakeMutation("unknown_op", name, absl::StrCat("op ", n.op(), " -> ", op),
                     [name, op](GraphDef* g) { MustFind(g, name)->set_op(op); }));
  }

  void UnknownAttr(const NodeDef& n) {
    std::string name = n.name();
    Add(MakeMutation("unknown_attr", name, "attr 'no_such_attr' added", [name](GraphDef* g) {
      (*MustFind(g, name)->mutable_attr())["no_such_attr"] = MakeAttr(int64_t{1});
    }));
  }

  // Removes one attr that has no default (rotating over them).
  void MissingAttr(const NodeDef& n, int k) {
    const OpDef& op = OpOf(n);
    std::vector<std::string> required;
    for (const std::string& a : AttrNames(n)) {
      const AttrDef* def = op.FindAttr(a);
      if (def != nullptr && !def->default_value.has_value()) required.push_back(a);
    }
    if (required.empty()) return;
    std::string attr = required[k % required.size()];
    std::string name = n.name();
    Add(MakeMutation("missing_attr", name, absl::StrCat("attr '", attr, "' removed"),
                     [name, attr](GraphDef* g) { MustFind(g, name)->mutable_attr()->erase(attr); }));
  }

  void AttrWrongKind(const NodeDef& n, int k) {
    std::vector<std::string> attrs = AttrNames(n);
    if (attrs.empty()) return;
    std::string attr = attrs[k % attrs.size()];
    AttrValue v = OtherKind(n.attr().at(attr), k);
    std::string name = n.name();
    Add(MakeMutation("attr_wrong_kind", name,
                     absl::StrCat("attr '", attr, "' ", AttrValueKindName(n.attr().at(attr)), " -> ",
                                  AttrValueKindName(v)),
                     [name, attr, v](GraphDef* g) { (*MustFind(g, name)->mutable_attr())[attr] = v; }));
  }

  // A type attr set to a type its constraint disallows (T of Add = bool), or,
  // for unconstrained ones, to a type no kernel supports.
  void BadTypeAttr(const NodeDef& n, int k) {
    const OpDef& op = OpOf(n);
    for (const std::string& attr : AttrNames(n)) {
      const AttrDef* def = op.FindAttr(attr);
      if (def == nullptr || def->type != "type") continue;
      std::string name = n.name();
      if (!def->allowed_types.empty()) {
        for (DataType t : {DT_BOOL, DT_STRING, DT_UINT16}) {
          if (std::find(def->allowed_types.begin(), def->allowed_types.end(), t) != def->allowed_types.end()) continue;
          Add(MakeMutation("disallowed_type", name, absl::StrCat("attr '", attr, "' -> ", DataTypeString(t)),
                           [name, attr, t](GraphDef* g) { (*MustFind(g, name)->mutable_attr())[attr] = MakeAttr(t); }));
          break;
        }
      } else {
        static const DataType kUnsupported[] = {DT_INVALID, DT_FLOAT_REF, static_cast<DataType>(77)};
        DataType t = kUnsupported[k % 3];
        Add(MakeMutation("unsupported_type", name, absl::StrCat("attr '", attr, "' -> ", DataTypeString(t)),
                         [name, attr, t](GraphDef* g) { (*MustFind(g, name)->mutable_attr())[attr] = MakeAttr(t); }));
      }
      return;  // one type attr per node
    }
  }

  void BelowMinimum(const NodeDef& n) {
    const OpDef& op = OpOf(n);
    for (const std::string& attr : AttrNames(n)) {
      const AttrDef* def = op.FindAttr(attr);
      if (def == nullptr || !def->has_minimum || def->type != "int") continue;
      std::string name = n.name();
      for (int64_t v : {def->minimum - 1, int64_t{-3}}) {
        Add(MakeMutation("below_minimum", name, absl::StrCat("attr '", attr, "' -> ", v),
                         [name, attr, v](GraphDef* g) { (*MustFind(g, name)->mutable_attr())[attr] = MakeAttr(v); }));
      }
    }
  }

  // One input (rotating over data and control inputs) renamed to a node that
  // does not exist; a node without inputs gets a control input from one.
  void Dangling(const NodeDef& n, int k) {
    std::string name = n.name();
    if (n.input_size() == 0) {
      Add(MakeMutation("dangling_input", name, "control input '^nowhere' added",
                       [name](GraphDef* g) { MustFind(g, name)->add_input("^nowhere"); }));
      return;
    }
    int i = k % n.input_size();
    const std::string& old = n.input(i);
    std::string src = InputNode(old);
    std::string missing = k % 2 == 0 ? src + "_typo" : "no/such/node";
    std::string replaced = IsControlInput(old) ? "^" + missing
                           : old.find(':') != std::string::npos ? absl::StrCat(missing, ":", InputPort(old))
                                                                : missing;
    Add(MakeMutation("dangling_input", name, absl::StrCat("input ", i, " '", old, "' -> '", replaced, "'"),
                     [name, i, replaced](GraphDef* g) { MustFind(g, name)->set_input(i, replaced); }));
  }

  void Duplicate(const NodeDef& n) {
    std::string name = n.name();
    Add(MakeMutation("duplicate_name", name, "a second node of that name appended", [name](GraphDef* g) {
      NodeDef copy = *MustFind(g, name);
      *g->add_node() = copy;
    }));
  }

  void InvalidName(const NodeDef& n, int k) {
    static const char* const kBad[] = {"", "bad name", "_leading_underscore", "-leading-dash", "has:colon",
                                       "^caret", "dollar$", "tab\tname", "semi;colon", "comma,name"};
    constexpr int kNumBad = sizeof(kBad) / sizeof(kBad[0]);
    std::string name = n.name();
    std::string bad = kBad[k % kNumBad];
    if (bad.size() > 2 && k % kNumBad != 1) bad = absl::StrCat(bad, "_", name);
    Mutation m = MakeMutation("invalid_name", name, absl::StrCat("renamed to '", bad, "'"),
                              [name, bad](GraphDef* g) { MustFind(g, name)->set_name(bad); });
    // An unnamed node can only be identified by its position.
    m.expect = {bad.empty() ? absl::StrCat("node #", k, " ") : Quoted(bad)};
    Add(std::move(m));
  }

  // Input 0 gets a bad port: one past the source's outputs, not a number,
  // negative, empty; or a control input with a port.
  void BadPort(const NodeDef& n, int k) {
    std::vector<int> data = DataInputPositions(n);
    if (data.empty()) return;
    int i = data[0];
    std::string src = InputNode(n.input(i));
    const NodeDef* src_def = FindNodeDef(base_, src);
    CHECK(src_def != nullptr);
    std::string name = n.name();
    switch (k % 5) {
      case 0: {
        std::string bad = absl::StrCat(src, ":", SignatureOf(*src_def).outputs.size());
        Add(MakeMutation("bad_port_out_of_range", name, absl::StrCat("input ", i, " -> '", bad, "'"),
                         [name, i, bad](GraphDef* g) { MustFind(g, name)->set_input(i, bad); }));
        break;
      }
      case 1:
      case 2:
      case 3: {
        static const char* const kKinds[] = {"bad_port_not_a_number", "bad_port_negative", "bad_port_empty"};
        static const char* const kPorts[] = {":x", ":-1", ":"};
        std::string bad = src + kPorts[k % 5 - 1];
        Add(MakeMutation(kKinds[k % 5 - 1], name, absl::StrCat("input ", i, " -> '", bad, "'"),
                         [name, i, bad](GraphDef* g) { MustFind(g, name)->set_input(i, bad); }));
        break;
      }
      default: {
        std::string bad = absl::StrCat("^", src, ":0");
        Add(MakeMutation("bad_port_control", name, absl::StrCat("control input '", bad, "' added"),
                         [name, bad](GraphDef* g) { MustFind(g, name)->add_input(bad); }));
      }
    }
  }

  void TooFewInputs(const NodeDef& n) {
    std::vector<int> data = DataInputPositions(n);
    if (data.empty()) return;
    int i = data.back();
    std::string name = n.name();
    Add(MakeMutation("too_few_inputs", name, absl::StrCat("input ", i, " '", n.input(i), "' removed"),
                     [name, i](GraphDef* g) {
                       auto* inputs = MustFind(g, name)->mutable_input();
                       inputs->erase(inputs->begin() + i);
                     }));
  }

  // One more data input (a copy of the first, or the graph's first node),
  // placed before any control inputs.
  void TooManyInputs(const NodeDef& n) {
    std::vector<int> data = DataInputPositions(n);
    std::string extra = data.empty() ? base_.node(0).name() : n.input(data[0]);
    if (extra == n.name()) extra = base_.node(1).name();
    int at = data.empty() ? 0 : data.back() + 1;
    std::string name = n.name();
    Add(MakeMutation("too_many_inputs", name, absl::StrCat("input '", extra, "' inserted at ", at),
                     [name, extra, at](GraphDef* g) {
                       NodeDef* node = MustFind(g, name);
                       node->add_input(extra);
                       auto* inputs = node->mutable_input();
                       std::rotate(inputs->begin() + at, inputs->end() - 1, inputs->end());
                     }));
  }

  void ControlBeforeData(const NodeDef& n) {
    std::vector<int> data = DataInputPositions(n);
    if (data.empty()) return;
    std::string control = "^" + InputNode(n.input(data[0]));
    std::string name = n.name();
    Add(MakeMutation("control_before_data", name, absl::StrCat("'", control, "' inserted first"),
                     [name, control](GraphDef* g) {
                       NodeDef* node = MustFind(g, name);
                       node->add_input(control);
                       auto* inputs = node->mutable_input();
                       std::rotate(inputs->begin(), inputs->end() - 1, inputs->end());
                     }));
  }

  // A data input (rotating) rewired to a new Const of a mismatched type (for a
  // Ref input: a plain value of the right base type); and, on every other node,
  // the node's type attr flipped so its own inputs no longer match.
  void DtypeMismatch(const NodeDef& n, int k) {
    std::vector<int> data = DataInputPositions(n);
    if (data.empty()) return;
    Signature sig = SignatureOf(n);
    int slot = k % static_cast<int>(data.size());
    int i = data[slot];
    DataType want = sig.inputs[slot];
    std::string name = n.name();
    std::string src = absl::StrCat("wrong_type_for_", name, "_", slot);
    if (IsRefType(want)) {
      DataType t = BaseType(want);
      Add(MakeMutation("value_into_ref", name,
                       absl::StrCat("input ", i, " -> a ", DataTypeString(t), " Const where ", DataTypeString(want),
                                    " is expected"),
                       [name, i, src, t](GraphDef* g) {
                         AddScalarConst(g, src, t);
                         MustFind(g, name)->set_input(i, src);
                       }));
    } else {
      DataType t = want == DT_FLOAT ? DT_INT32 : DT_FLOAT;
      Add(MakeMutation("dtype_mismatch", name,
                       absl::StrCat("input ", i, " -> a ", DataTypeString(t), " Const where ", DataTypeString(want),
                                    " is expected"),
                       [name, i, src, t](GraphDef* g) {
                         AddScalarConst(g, src, t);
                         MustFind(g, name)->set_input(i, src);
                       }));
    }
    if (k % 2 != 0) return;
    const OpDef& op = OpOf(n);
    for (const ArgDef& arg : op.inputs) {
      if (arg.type_attr.empty()) continue;
      const AttrDef* def = op.FindAttr(arg.type_attr);
      DataType current = n.attr().at(arg.type_attr).type();
      for (DataType t : {DT_INT32, DT_FLOAT, DT_DOUBLE}) {
        if (t == current) continue;
        if (!def->allowed_types.empty() &&
            std::find(def->allowed_types.begin(), def->allowed_types.end(), t) == def->allowed_types.end()) {
          continue;
        }
        std::string attr = arg.type_attr;
        Add(MakeMutation("dtype_mismatch_attr", name,
                         absl::StrCat("attr '", attr, "' ", DataTypeString(current), " -> ", DataTypeString(t)),
                         [name, attr, t](GraphDef* g) { (*MustFind(g, name)->mutable_attr())[attr] = MakeAttr(t); }));
        return;
      }
    }
  }

  // A self loop on every node; and on nodes with inputs, a back edge from a
  // node downstream of it (a data edge where the types allow, else control).
  void Cycles(const NodeDef& n, int k) {
    std::string name = n.name();
    Signature sig = SignatureOf(n);
    std::vector<int> data = DataInputPositions(n);
    if (!data.empty() && !sig.outputs.empty() && Compatible(sig.outputs[0], sig.inputs[0])) {
      int i = data[0];
      Add(MakeMutation("cycle", name, absl::StrCat("self loop: input ", i, " -> '", name, "'"),
                       [name, i](GraphDef* g) { MustFind(g, name)->set_input(i, name); }));
    } else {
      Add(MakeMutation("cycle", name, absl::StrCat("self loop: '^", name, "' added"),
                       [name](GraphDef* g) { MustFind(g, name)->add_input("^" + name); }));
    }
    if (n.input_size() == 0) return;
    // A back edge out of a NextIteration node closes a legal loop, so those
    // are no candidates.
    std::vector<std::string> down;
    for (const std::string& d : Reachable(forward_, name)) {
      if (FindNodeDef(base_, d)->op() != "NextIteration") down.push_back(d);
    }
    if (down.empty()) return;
    // Prefer a data back edge into input 0 from the nearest type-compatible
    // downstream node (on every other node), else a control edge from the
    // farthest one.
    std::string via;
    int port = 0;
    if (k % 2 == 0 && !data.empty()) {
      for (const std::string& d : down) {
        Signature ds = SignatureOf(*FindNodeDef(base_, d));
        for (size_t p = 0; p < ds.outputs.size() && via.empty(); ++p) {
          if (Compatible(ds.outputs[p], sig.inputs[0])) {
            via = d;
            port = static_cast<int>(p);
          }
        }
        if (!via.empty()) break;
      }
    }
    Mutation m;
    if (!via.empty()) {
      std::string in = port == 0 ? via : absl::StrCat(via, ":", port);
      int i = data[0];
      m = MakeMutation("cycle", name, absl::StrCat("back edge: input ", i, " -> '", in, "'"),
                       [name, i, in](GraphDef* g) { MustFind(g, name)->set_input(i, in); });
    } else {
      via = down.back();
      m = MakeMutation("cycle", name, absl::StrCat("back edge: '^", via, "' added"),
                       [name, via](GraphDef* g) { MustFind(g, name)->add_input("^" + via); });
    }
    // Any node on a path name -> ... -> via lies on the new cycle.
    std::vector<std::string> up = Reachable(backward_, via);
    std::set<std::string> up_set(up.begin(), up.end());
    m.expect = {Quoted(name), Quoted(via)};
    for (const std::string& d : down) {
      if (up_set.count(d)) m.expect.push_back(Quoted(d));
    }
    Add(std::move(m));
  }

  void ConstValue(const NodeDef& n, int k) {
    if (n.op() != "Const") return;
    std::string name = n.name();
    const TensorProto& proto = n.attr().at("value").tensor();
    Add(MakeMutation("const_content_size", name,
                     absl::StrCat("tensor_content ", proto.tensor_content().size(), " -> ",
                                  proto.tensor_content().size() + 1, " bytes"),
                     [name](GraphDef* g) {
                       MustFind(g, name)->mutable_attr()->at("value").mutable_tensor()->mutable_tensor_content()->push_back(
                           '\0');
                     }));
    DataType dtype = proto.dtype();
    DataType other = dtype == DT_FLOAT ? DT_INT32 : DT_FLOAT;
    Add(MakeMutation("const_dtype_differs", name,
                     absl::StrCat("attr 'dtype' ", DataTypeString(dtype), " -> ", DataTypeString(other)),
                     [name, other](GraphDef* g) { (*MustFind(g, name)->mutable_attr())["dtype"] = MakeAttr(other); }));
    Add(MakeMutation("const_negative_dim", name, "a negative dimension in the value's shape", [name](GraphDef* g) {
      TensorShapeProto* shape = MustFind(g, name)->mutable_attr()->at("value").mutable_tensor()->mutable_tensor_shape();
      if (shape->dim_size() == 0) {
        shape->add_dim()->set_size(-1);
      } else {
        shape->mutable_dim(0)->set_size(-shape->dim(0).size());
      }
    }));
    if (k % 2 == 0) {
      Add(MakeMutation("const_too_many_values", name, "typed values, one more than the shape holds",
                       [name, dtype](GraphDef* g) {
                         TensorProto* t = MustFind(g, name)->mutable_attr()->at("value").mutable_tensor();
                         auto shape = TensorShape::FromProto(t->tensor_shape());
                         CHECK(shape.ok());
                         t->clear_tensor_content();
                         for (int64_t e = 0; e <= shape->num_elements(); ++e) {
                           if (dtype == DT_FLOAT) t->add_float_val(1.0f);
                           else t->add_int_val(1);
                         }
                       }));
    }
    // 2^31 x 2^31 elements: allowed as a shape, but its byte size overflows.
    if (!overflow_done_ && (dtype == DT_FLOAT || dtype == DT_INT32)) {
      overflow_done_ = true;
      Add(MakeMutation("const_size_overflow", name, "shape [2^31,2^31] without values", [name](GraphDef* g) {
        TensorProto* t = MustFind(g, name)->mutable_attr()->at("value").mutable_tensor();
        t->clear_tensor_content();
        t->mutable_tensor_shape()->clear_dim();
        t->mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 31);
        t->mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 31);
      }));
    }
  }

  void ShapeAttr(const NodeDef& n) {
    if (FindAttr(n, "shape") == nullptr || n.op() == "Const") return;
    std::string name = n.name();
    Add(MakeMutation("shape_attr_negative_dim", name, "attr 'shape' gets a dimension of -5", [name](GraphDef* g) {
      (*MustFind(g, name)->mutable_attr())["shape"].mutable_shape()->add_dim()->set_size(-5);
    }));
    Add(MakeMutation("shape_attr_unknown_rank_with_dims", name, "attr 'shape' has unknown_rank and dims",
                     [name](GraphDef* g) {
                       (*MustFind(g, name)->mutable_attr())["shape"].mutable_shape()->set_unknown_rank(true);
                     }));
  }

  const GraphDef& base_;
  std::map<std::string, std::vector<std::string>> forward_;
  std::map<std::string, std::vector<std::string>> backward_;
  std::vector<Mutation> out_;
  bool overflow_done_ = false;
};

// ---- The base graphs ----------------------------------------------------------

// x: fed [[1,1],[1,1]]. scaled = (a @ b + x) * a; uw = u + w; not = !(3 < 4).
BaseGraph ArithBase() {
  GraphDefBuilder b;
  b.Const("a", FloatTensor({1, 2, 3, 4}, {2, 2}));
  b.Const("b", FloatTensor({1, 0, 0, 1}, {2, 2}));
  b.Node("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({2, 2}))}});
  b.Node("mm", "MatMul", {"a", "b"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Binary("Add", "sum", "mm", "x", DT_FLOAT);
  b.Node("count", kCountingOp, {"sum"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Binary("Mul", "scaled", "count", "a", DT_FLOAT);
  b.Const("u", FloatTensor({1, 2}, {2}));
  b.Const("w", FloatTensor({3, 4}, {2}));
  b.Binary("Add", "uw", "u", "w", DT_FLOAT);
  b.Const("i3", Tensor::Scalar<int32_t>(3));
  b.Const("i4", Tensor::Scalar<int32_t>(4));
  b.Binary("Less", "less", "i3", "i4", DT_INT32);
  b.Node("not", "LogicalNot", {"less"});
  b.NoOp("done", {"scaled", "not"});

  BaseGraph base;
  base.name = "arith";
  base.graph = b.graph();
  base.feeds = {{"x", FloatTensor({1, 1, 1, 1}, {2, 2})}};
  base.fetches = {"scaled", "uw", "not"};
  base.targets = {"done"};
  base.counting_runs_per_step = 1;
  base.check_outputs = [](const std::vector<Tensor>& out) {
    ASSERT_EQ(out.size(), 3u);
    const float* scaled = out[0].data<float>();
    EXPECT_EQ(std::vector<float>(scaled, scaled + 4), (std::vector<float>{2, 6, 12, 20}));
    const float* uw = out[1].data<float>();
    EXPECT_EQ(std::vector<float>(uw, uw + 2), (std::vector<float>{4, 6}));
    EXPECT_EQ(out[2].scalar<bool>(), false);
  };

  auto& s = base.specific;
  auto shape_defect = [&](std::string kind, std::string node, std::string const_name, Tensor value,
                          std::string detail) {
    Mutation m = MakeMutation(std::move(kind), node, std::move(detail),
                              [const_name, value](GraphDef* g) { SetConst(g, const_name, value); });
    m.edits.insert(const_name);
    s.push_back(std::move(m));
  };
  shape_defect("matmul_inner_dims", "mm", "b", FloatTensor({1, 2, 3, 4, 5, 6}, {3, 2}), "b -> a [3,2] Const");
  shape_defect("matmul_rank", "mm", "a", FloatTensor({1, 2, 3, 4}, {4}), "a -> a [4] Const");
  shape_defect("add_shapes", "uw", "w", FloatTensor({3, 4, 5}, {3}), "w -> a [3] Const");
  {
    Mutation m = MakeMutation("add_shapes", "sum", "placeholder x declared [3,3]", [](GraphDef* g) {
      (*MustFind(g, "x")->mutable_attr())["shape"] = MakeAttr(TensorShape({3, 3}));
    });
    m.edits.insert("x");
    s.push_back(std::move(m));
  }
  s.push_back(MakeMutation("exit_outside_loop", "stray_exit", "Exit(i3) added in the root frame", [](GraphDef* g) {
    AddNode(g, "stray_exit", "Exit", {"i3"}, {{"T", MakeAttr(DT_INT32)}});
  }));
  // Issue 22. Zero-then-huge shapes: [0, 2^62, 4] holds no element, but the
  // product of its non-zero dims is 2^64, so no tensor may have it (every
  // kernel that drops, permutes or combines dims would overflow).
  const int64_t big = int64_t{1} << 62;
  auto shape_proto = [](std::vector<int64_t> dims) {
    TensorShapeProto p;
    for (int64_t d : dims) p.add_dim()->set_size(d);
    return p;
  };
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{0, big, 4}, {big, 0, 4}, {4, 0, big}}) {
    const std::string detail = absl::StrCat("value's shape -> [", absl::StrJoin(dims, ","), "], no values");
    Mutation m = MakeMutation("const_zero_then_huge", "a", detail, [dims, shape_proto](GraphDef* g) {
      TensorProto* t = MustFind(g, "a")->mutable_attr()->at("value").mutable_tensor();
      t->clear_tensor_content();
      *t->mutable_tensor_shape() = shape_proto(dims);
    });
    s.push_back(std::move(m));
    s.push_back(MakeMutation("shape_attr_zero_then_huge", "x",
                             absl::StrCat("attr 'shape' -> [", absl::StrJoin(dims, ","), "]"),
                             [dims, shape_proto](GraphDef* g) {
                               (*MustFind(g, "x")->mutable_attr())["shape"] = MakeAttr(shape_proto(dims));
                             }));
  }
  s.push_back(MakeMutation("shape_attr_too_large", "x", "attr 'shape' -> [2^31,2^31,2^31]", [shape_proto](GraphDef* g) {
    const int64_t d = int64_t{1} << 31;
    (*MustFind(g, "x")->mutable_attr())["shape"] = MakeAttr(shape_proto({d, d, d}));
  }));
  // Placeholder dims >= 2^31: fine as the length of a vector, but as the
  // rank of a Fill's or Reshape's output (the length of their shape input)
  // they named a negative int rank. Each is the consumer's error.
  for (int64_t d : {int64_t{1} << 31, (int64_t{1} << 32) + 3, int64_t{1} << 62}) {
    for (const char* op : {"Fill", "Reshape"}) {
      const std::string consumer = absl::StrCat(op == std::string("Fill") ? "fill" : "reshape", "_of_", d);
      const std::string ph = "dims_" + consumer;
      s.push_back(MakeMutation("placeholder_dim_as_rank", consumer,
                               absl::StrCat(op, " of a Placeholder of shape [", d, "] added"),
                               [op = std::string(op), consumer, ph, d, shape_proto](GraphDef* g) {
                                 AddNode(g, ph, "Placeholder", {},
                                         {{"dtype", MakeAttr(DT_INT32)}, {"shape", MakeAttr(shape_proto({d}))}});
                                 if (op == "Fill") {
                                   AddNode(g, consumer, "Fill", {ph, "i3"}, {{"T", MakeAttr(DT_INT32)}});
                                 } else {
                                   AddNode(g, consumer, "Reshape", {"i3", ph}, {{"T", MakeAttr(DT_INT32)}});
                                 }
                               }));
    }
  }
  // A shape that exists only in shape inference: MatMul of [2^40, ?] and
  // [?, 2^40] Placeholders (fed empty they would be valid) has no valid
  // output shape.
  s.push_back(MakeMutation("matmul_output_too_large", "mm_big", "MatMul of [2^40,?] and [?,2^40] added",
                           [shape_proto](GraphDef* g) {
                             const int64_t d = int64_t{1} << 40;
                             AddNode(g, "pa", "Placeholder", {},
                                     {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(shape_proto({d, -1}))}});
                             AddNode(g, "pb", "Placeholder", {},
                                     {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(shape_proto({-1, d}))}});
                             AddNode(g, "mm_big", "MatMul", {"pa", "pb"}, {{"T", MakeAttr(DT_FLOAT)}});
                           }));
  // Issue 22, class 11: small NodeDefs that would allocate a lot: a Const of
  // [2^28] floats (1 GiB) from one value; an AddN with N = 2^20.
  {
    Mutation m = MakeMutation("const_repeated_too_large", "w", "value's shape -> [2^28] with one value", [](GraphDef* g) {
      TensorProto* t = MustFind(g, "w")->mutable_attr()->at("value").mutable_tensor();
      t->clear_tensor_content();
      t->clear_float_val();
      t->add_float_val(1.0f);
      t->mutable_tensor_shape()->clear_dim();
      t->mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 28);
    });
    s.push_back(std::move(m));
  }
  s.push_back(MakeMutation("number_attr_too_large", "addn", "AddN(u, w) with N = 2^20 added", [](GraphDef* g) {
    AddNode(g, "addn", "AddN", {"u", "w"}, {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(int64_t{1} << 20)}});
  }));
  s.push_back(MakeMutation("next_iteration_outside_loop", "stray_next", "NextIteration(i3) added in the root frame",
                           [](GraphDef* g) {
                             AddNode(g, "stray_next", "NextIteration", {"i3"}, {{"T", MakeAttr(DT_INT32)}});
                           }));
  return base;
}

// v = [1,2]; v += [10,20]; read = the result.
BaseGraph VarBase() {
  GraphDefBuilder b;
  b.Variable("v", DT_FLOAT, TensorShape({2}), kContainer);
  b.Const("init", FloatTensor({1, 2}, {2}));
  b.Assign("assign", "v", "init", DT_FLOAT);
  b.Const("delta", FloatTensor({10, 20}, {2}));
  b.AssignAdd("incr", "v", "delta", DT_FLOAT);
  b.FindNode("incr")->add_input("^assign");
  b.Node("read", kCountingOp, {"incr"}, {{"T", MakeAttr(DT_FLOAT)}});

  BaseGraph base;
  base.name = "var";
  base.graph = b.graph();
  base.fetches = {"read"};
  base.counting_runs_per_step = 1;
  base.check_outputs = [](const std::vector<Tensor>& out) {
    ASSERT_EQ(out.size(), 1u);
    const float* v = out[0].data<float>();
    EXPECT_EQ(std::vector<float>(v, v + 2), (std::vector<float>{11, 22}));
  };

  auto& s = base.specific;
  auto shape_defect = [&](std::string kind, std::string node, std::string const_name, Tensor value,
                          std::string detail) {
    Mutation m = MakeMutation(std::move(kind), node, std::move(detail),
                              [const_name, value](GraphDef* g) { SetConst(g, const_name, value); });
    m.edits.insert(const_name);
    s.push_back(std::move(m));
  };
  shape_defect("assign_shape", "assign", "init", FloatTensor({1, 2, 3}, {3}), "init -> a [3] Const");
  shape_defect("assign_shape", "incr", "delta", FloatTensor({1, 2, 3}, {3}), "delta -> a [3] Const");
  s.push_back(MakeMutation("exit_outside_loop", "stray_exit", "Exit(init) added in the root frame", [](GraphDef* g) {
    AddNode(g, "stray_exit", "Exit", {"init"}, {{"T", MakeAttr(DT_FLOAT)}});
  }));
  return base;
}

// s = 0; for (i = 1; i < 4; ++i) s += count(i); result = s (6).
BaseGraph LoopBase() {
  const std::string frame = "sum_loop";
  GraphDefBuilder b;
  b.Const("limit", Tensor::Scalar<int32_t>(4));
  b.Const("one", Tensor::Scalar<int32_t>(1));
  b.Const("zero", Tensor::Scalar<int32_t>(0));
  b.Enter("limit_e", "limit", DT_INT32, frame, true);
  b.Enter("one_e", "one", DT_INT32, frame, true);
  b.Enter("i_e", "one", DT_INT32, frame);
  b.Enter("s_e", "zero", DT_INT32, frame);
  b.Merge("i_m", {"i_e", "i_next"}, DT_INT32);
  b.Merge("s_m", {"s_e", "s_next"}, DT_INT32);
  b.Binary("Less", "less", "i_m", "limit_e", DT_INT32);
  b.LoopCond("cond", "less");
  b.Switch("i_sw", "i_m", "cond", DT_INT32);
  b.Switch("s_sw", "s_m", "cond", DT_INT32);
  b.Exit("i_exit", "i_sw:0", DT_INT32);
  b.Exit("s_exit", "s_sw:0", DT_INT32);
  b.Identity("i_body", "i_sw:1", DT_INT32);
  b.Identity("s_body", "s_sw:1", DT_INT32);
  b.Node("count", kCountingOp, {"i_body"}, {{"T", MakeAttr(DT_INT32)}});
  b.Binary("Add", "i_new", "i_body", "one_e", DT_INT32);
  b.Binary("Add", "s_new", "s_body", "count", DT_INT32);
  b.NextIteration("i_next", "i_new", DT_INT32);
  b.NextIteration("s_next", "s_new", DT_INT32);
  b.Identity("result", "s_exit", DT_INT32);

  BaseGraph base;
  base.name = "loop";
  base.graph = b.graph();
  base.fetches = {"result"};
  base.counting_runs_per_step = 3;
  base.check_outputs = [](const std::vector<Tensor>& out) {
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].scalar<int32_t>(), 6);
  };

  auto& s = base.specific;
  // A [2] bool predicate entering the loop, wired into LoopCond or a Switch.
  // (Through `limit` this would go unseen: loop variables have unknown shapes.)
  auto add_vector_pred = [frame](GraphDef* g) {
    AddNode(g, "pred2", "Const", {},
            {{"value", MakeAttr(Tensor::FromVector<bool>(absl::MakeConstSpan({true, false}), TensorShape({2})))},
             {"dtype", MakeAttr(DT_BOOL)}});
    AddNode(g, "pred2_e", "Enter", {"pred2"},
            {{"T", MakeAttr(DT_BOOL)}, {"frame_name", MakeAttr(frame)}, {"is_constant", MakeAttr(true)}});
  };
  s.push_back(MakeMutation("predicate_not_scalar", "cond", "input -> a [2] bool entering the loop",
                           [add_vector_pred](GraphDef* g) {
                             add_vector_pred(g);
                             MustFind(g, "cond")->set_input(0, "pred2_e");
                           }));
  s.push_back(MakeMutation("predicate_not_scalar", "i_sw", "pred -> a [2] bool entering the loop",
                           [add_vector_pred](GraphDef* g) {
                             add_vector_pred(g);
                             MustFind(g, "i_sw")->set_input(1, "pred2_e");
                           }));
  for (const char* exit : {"i_exit", "s_exit"}) {
    std::string name = exit;
    s.push_back(MakeMutation("exit_outside_loop", name, "input -> 'limit' (a root-frame value)",
                             [name](GraphDef* g) { MustFind(g, name)->set_input(0, "limit"); }));
  }
  for (const char* next : {"i_next", "s_next"}) {
    std::string name = next;
    s.push_back(MakeMutation("next_iteration_outside_loop", name, "input -> 'limit' (a root-frame value)",
                             [name](GraphDef* g) { MustFind(g, name)->set_input(0, "limit"); }));
  }
  // A NextIteration feeding something other than a Merge (the cycle passes
  // through NextIteration, so only the back-edge rule catches it).
  for (const auto& [node, input, next] : std::vector<std::tuple<std::string, int, std::string>>{
           {"i_new", 0, "i_next"}, {"s_new", 0, "s_next"}, {"result", -1, "i_next"}}) {
    std::string name = node, src = next;
    int i = input;
    Mutation m = MakeMutation(
        "next_iteration_into_non_merge", name,
        i < 0 ? absl::StrCat("control input '^", src, "' added") : absl::StrCat("input ", i, " -> '", src, "'"),
        [name, i, src](GraphDef* g) {
          if (i < 0) MustFind(g, name)->add_input("^" + src);
          else MustFind(g, name)->set_input(i, src);
        });
    m.expect.push_back(Quoted(src));
    s.push_back(std::move(m));
  }
  for (const char* enter : {"limit_e", "one_e", "i_e", "s_e"}) {
    std::string name = enter;
    s.push_back(MakeMutation("enter_empty_frame", name, "frame_name -> ''", [name](GraphDef* g) {
      (*MustFind(g, name)->mutable_attr())["frame_name"] = MakeAttr("");
    }));
  }
  // Inputs that come through an Enter, rewired to bypass it.
  for (const auto& [node, input, root] : std::vector<std::tuple<std::string, int, std::string>>{
           {"i_m", 0, "one"}, {"s_m", 0, "zero"}, {"less", 1, "limit"}, {"i_new", 1, "one"}}) {
    std::string name = node, src = root;
    int i = input;
    s.push_back(MakeMutation("two_frames", name, absl::StrCat("input ", i, " -> '", src, "' (bypassing its Enter)"),
                             [name, i, src](GraphDef* g) { MustFind(g, name)->set_input(i, src); }));
  }
  s.push_back(MakeMutation("two_frames", "peek", "root-frame Add(i_body, limit) added", [](GraphDef* g) {
    AddNode(g, "peek", "Add", {"i_body", "limit"}, {{"T", MakeAttr(DT_INT32)}});
  }));
  s.push_back(MakeMutation("two_frames", "peek", "root-frame Identity(limit, ^i_body) added", [](GraphDef* g) {
    AddNode(g, "peek", "Identity", {"limit", "^i_body"}, {{"T", MakeAttr(DT_INT32)}});
  }));
  s.push_back(MakeMutation("enter_own_frame", "reenter", "Enter(i_body) into frame 'sum_loop' added",
                           [frame](GraphDef* g) {
                             AddNode(g, "reenter", "Enter", {"i_body"},
                                     {{"T", MakeAttr(DT_INT32)}, {"frame_name", MakeAttr(frame)}});
                           }));
  return base;
}

std::vector<BaseGraph> BaseGraphs() { return {ArithBase(), VarBase(), LoopBase()}; }

// ---- Case generation ------------------------------------------------------------

Case MakeCase(const BaseGraph& base, std::vector<Mutation> mutations) {
  Case c;
  c.base = base.name;
  c.graph = base.graph;
  for (const Mutation& m : mutations) m.apply(&c.graph);
  c.mutations = std::move(mutations);
  c.fetch = base.fetches[0];
  return c;
}

std::vector<Mutation> SingleMutations(const BaseGraph& base) {
  std::vector<Mutation> all = Generator(base.graph).All();
  for (const Mutation& m : base.specific) all.push_back(m);
  return all;
}

bool Disjoint(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& x : a) {
    if (b.count(x)) return false;
  }
  return true;
}

// `count` pairs of single mutations of different kinds on disjoint nodes,
// picked by a fixed pseudo-random sequence.
std::vector<Case> PairCases(const BaseGraph& base, const std::vector<Mutation>& singles, size_t count) {
  std::vector<Case> out;
  std::set<std::pair<size_t, size_t>> used;
  uint64_t state = 0x5eed;
  auto next = [&state](size_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>((state >> 33) % n);
  };
  const size_t n = singles.size();
  for (int attempt = 0; out.size() < count && attempt < 100000; ++attempt) {
    size_t i = next(n), j = next(n);
    if (i == j || singles[i].kind == singles[j].kind) continue;
    if (!Disjoint(singles[i].edits, singles[j].edits)) continue;
    if (!used.insert({std::min(i, j), std::max(i, j)}).second) continue;
    out.push_back(MakeCase(base, {singles[i], singles[j]}));
  }
  return out;
}

struct AllCases {
  std::vector<Case> singles;
  std::vector<Case> pairs;
};

const AllCases& Cases() {
  static const AllCases* cases = [] {
    auto* c = new AllCases;
    for (const BaseGraph& base : BaseGraphs()) {
      std::vector<Mutation> singles = SingleMutations(base);
      for (const Mutation& m : singles) c->singles.push_back(MakeCase(base, {m}));
      for (Case& p : PairCases(base, singles, 50)) c->pairs.push_back(std::move(p));
    }
    return c;
  }();
  return *cases;
}

// ---- Checks ---------------------------------------------------------------------

std::unique_ptr<Session> OneThreadSession() {
  SessionOptions options;
  options.inter_op_threads = 1;
  auto session = NewSession(options);
  CHECK(session.ok()) << session.status();
  return std::move(session).value();
}

// Create must reject the case's graph, naming a targeted node, with no
// counting kernel built or run; a Run afterwards must fail the same way.
void ExpectRejected(const Case& c) {
  const std::string name = CaseName(c);
  const int64_t built = g_counting_kernels_built.load();
  const int64_t ran = g_counting_kernels_run.load();
  std::unique_ptr<Session> session = OneThreadSession();
  absl::Status s = session->Create(c.graph);
  if (std::getenv("MALFORMED_GRAPH_TEST_VERBOSE") != nullptr) std::cout << name << "\n  -> " << s << "\n";
  ASSERT_FALSE(s.ok()) << name << "\n  was accepted";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << name << "\n  status: " << s;
  std::vector<std::string> expect;
  for (const Mutation& m : c.mutations) expect.insert(expect.end(), m.expect.begin(), m.expect.end());
  bool named = false;
  for (const std::string& e : expect) named |= absl::StrContains(s.message(), e);
  EXPECT_TRUE(named) << name << "\n  status: " << s << "\n  expected one of: " << absl::StrJoin(expect, " ");
  std::vector<Tensor> out;
  absl::Status run = session->Run({}, {c.fetch}, {}, &out);
  EXPECT_EQ(run.code(), absl::StatusCode::kFailedPrecondition) << name << "\n  Run: " << run;
  EXPECT_TRUE(absl::StrContains(run.message(), "Run called before Create")) << name << "\n  Run: " << run;
  EXPECT_EQ(g_counting_kernels_built.load(), built) << name << ": a kernel was built";
  EXPECT_EQ(g_counting_kernels_run.load(), ran) << name << ": a kernel ran";
}

TEST(MalformedGraphTest, EveryBaseGraphIsAcceptedAndRuns) {
  for (const BaseGraph& base : BaseGraphs()) {
    SCOPED_TRACE("base=" + base.name);
    Session::Reset({kContainer});
    const int64_t built = g_counting_kernels_built.load();
    const int64_t ran = g_counting_kernels_run.load();
    std::unique_ptr<Session> session = OneThreadSession();
    absl::Status s = session->Create(base.graph);
    ASSERT_TRUE(s.ok()) << s;
    std::vector<Tensor> out;
    s = session->Run(base.feeds, base.fetches, base.targets, &out);
    ASSERT_TRUE(s.ok()) << s;
    base.check_outputs(out);
    EXPECT_GT(g_counting_kernels_built.load(), built);
    EXPECT_EQ(g_counting_kernels_run.load() - ran, base.counting_runs_per_step);
  }
  Session::Reset({kContainer});
}

TEST(MalformedGraphTest, SingleDefectsAreRejectedBeforeAnyKernelRuns) {
  for (const Case& c : Cases().singles) ExpectRejected(c);
}

TEST(MalformedGraphTest, PairsOfDefectsAreRejectedBeforeAnyKernelRuns) {
  for (const Case& c : Cases().pairs) ExpectRejected(c);
}

// The generated set is large and covers every defect the issue lists.
TEST(MalformedGraphTest, CasesCoverEveryDefect) {
  const AllCases& cases = Cases();
  std::map<std::string, int> per_kind;
  std::map<std::string, int> per_base;
  for (const Case& c : cases.singles) {
    ++per_kind[c.mutations[0].kind];
    ++per_base[c.base];
  }
  std::cout << "malformed GraphDefs: " << cases.singles.size() + cases.pairs.size() << " cases ("
            << cases.singles.size() << " single defects, " << cases.pairs.size() << " pairs)\n";
  for (const auto& [base, n] : per_base) std::cout << "  base " << base << ": " << n << " single defects\n";
  for (const auto& [kind, n] : per_kind) std::cout << "  " << kind << ": " << n << "\n";
  EXPECT_GE(cases.singles.size() + cases.pairs.size(), 300u);
  EXPECT_GE(cases.pairs.size(), 100u);
  for (const char* kind :
       {"unknown_op", "unknown_attr", "missing_attr", "attr_wrong_kind", "disallowed_type", "unsupported_type",
        "below_minimum", "dangling_input", "duplicate_name", "invalid_name", "bad_port_out_of_range",
        "bad_port_not_a_number", "bad_port_negative", "bad_port_empty", "bad_port_control", "too_few_inputs",
        "too_many_inputs", "control_before_data", "cycle", "dtype_mismatch", "dtype_mismatch_attr", "value_into_ref",
        "exit_outside_loop", "next_iteration_outside_loop", "next_iteration_into_non_merge", "two_frames", "enter_empty_frame", "enter_own_frame",
        "const_content_size", "const_dtype_differs", "const_negative_dim", "const_too_many_values",
        "const_size_overflow", "shape_attr_negative_dim", "shape_attr_unknown_rank_with_dims", "matmul_inner_dims",
        "matmul_rank", "add_shapes", "assign_shape", "predicate_not_scalar", "const_zero_then_huge",
        "shape_attr_zero_then_huge", "shape_attr_too_large", "placeholder_dim_as_rank", "matmul_output_too_large",
        "const_repeated_too_large", "number_attr_too_large"}) {
    EXPECT_GT(per_kind[kind], 0) << "no case for defect " << kind;
  }
  // Every case name is distinct, so a failure points at one case.
  std::set<std::string> names;
  for (const auto* list : {&cases.singles, &cases.pairs}) {
    for (const Case& c : *list) EXPECT_TRUE(names.insert(CaseName(c)).second) << "duplicate case " << CaseName(c);
  }
}

}  // namespace
}  // namespace sluice
