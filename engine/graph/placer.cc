// The placer: per-node feasible device sets, colocation groups by
// union-find, intersection per group, then either the lowest index (or the
// first data input's device for unconstrained nodes) or a simulated
// execution over a cost model.
#include "engine/graph/placer.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "engine/framework/device_name.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/control_flow.h"
#include "engine/graph/cost_model.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace {

enum class LinkKind { kRef, kResource, kClass, kSharedName, kFrame };

// A colocation link between two nodes (ids). kRef, kResource: a is the edge's source;
// kClass: a has the _class entry naming b.
struct Link {
  int a;
  int b;
  LinkKind kind;
};

// A requested device spec and the devices it matches.
struct Spec {
  std::string text;  // canonical
  DeviceName name;
  std::vector<uint64_t> mask;
  bool any = false;  // no part set
};

// Which device types have a kernel for one (op, type attrs).
struct KernelEntry {
  std::vector<uint64_t> mask;
  std::vector<std::string> types;  // those with a kernel, in DeviceTypes() order
};

struct NodeConstraints {
  int spec = -1;          // index into specs_ (-1: nothing requested)
  int relaxed_spec = -1;  // soft placement's replacement of `spec`, or -1
  int kernel = -1;        // index into kernels_
  int pinned = -1;        // device index, or -1
  bool in_frame = false;
};

class Placer {
 public:
  Placer(const PlacementOptions& options, Graph* graph, PlacementConflict* conflict)
      : options_(options),
        devices_(*options.devices),
        graph_(graph),
        conflict_(conflict),
        num_devices_(devices_.num_devices()),
        words_((num_devices_ + 63) / 64),
        n_(graph->num_node_ids()) {}

  absl::Status Run() {
    absl::Status s = NodeConstraintsPass();
    if (s.ok()) s = ColocationPass();
    if (s.ok()) s = IntersectPass();
    if (s.ok() && options_.cost_model != nullptr) s = CostPass();
    if (!s.ok()) return s;
    ChoosePass();
    std::vector<int> indices(n_, -1);
    for (int id = 0; id < n_; ++id) {
      Node* node = graph_->FindNodeId(id);
      if (node == nullptr) continue;
      node->set_assigned_device(devices_.name(choice_[id]));
      indices[id] = choice_[id];
    }
    if (options_.device_indices != nullptr) *options_.device_indices = std::move(indices);
    return absl::OkStatus();
  }

 private:
  // ---- device masks ----
  std::vector<uint64_t> Full() const {
    std::vector<uint64_t> m(words_, ~uint64_t{0});
    if (num_devices_ % 64 != 0) m.back() = (uint64_t{1} << (num_devices_ % 64)) - 1;
    return m;
  }
  std::vector<uint64_t> None() const { return std::vector<uint64_t>(words_, 0); }
  std::vector<uint64_t> Single(int d) const {
    std::vector<uint64_t> m = None();
    m[d / 64] |= uint64_t{1} << (d % 64);
    return m;
  }
  std::vector<uint64_t> Of(const std::vector<int>& indices) const {
    std::vector<uint64_t> m = None();
    for (int d : indices) m[d / 64] |= uint64_t{1} << (d % 64);
    return m;
  }
  static bool Has(const uint64_t* m, int d) { return (m[d / 64] >> (d % 64)) & 1; }
  bool Empty(const uint64_t* m) const {
    for (int w = 0; w < words_; ++w) {
      if (m[w] != 0) return false;
    }
    return true;
  }
  bool IsFull(const uint64_t* m) const {
    std::vector<uint64_t> full = Full();
    return std::equal(full.begin(), full.end(), m);
  }
  // *dst &= src.
  void And(const uint64_t* src, uint64_t* dst) const {
    for (int w = 0; w < words_; ++w) dst[w] &= src[w];
  }
  bool Disjoint(const uint64_t* a, const uint64_t* b) const {
    for (int w = 0; w < words_; ++w) {
      if ((a[w] & b[w]) != 0) return false;
    }
    return true;
  }
  int Lowest(const uint64_t* m) const {
    for (int w = 0; w < words_; ++w) {
      if (m[w] != 0) return w * 64 + __builtin_ctzll(m[w]);
    }
    return -1;
  }
  // The device a node goes to when nothing else decides: a GPU before a CPU
  // (the work the papers put on GPUs: whitepaper §3.2.1), then the lowest index.
  int Preferred(const uint64_t* m) const {
    if (!gpu_mask_.empty()) {
      for (int w = 0; w < words_; ++w) {
        const uint64_t both = m[w] & gpu_mask_[w];
        if (both != 0) return w * 64 + __builtin_ctzll(both);
      }
    }
    return Lowest(m);
  }
  // Whether following an input on device `d` keeps the node on its preferred
  // device type (a node never leaves a GPU it could use for its input's CPU).
  bool AsPreferred(const uint64_t* m, int d) const {
    if (gpu_mask_.empty() || ((gpu_mask_[d / 64] >> (d % 64)) & 1) != 0) return true;
    for (int w = 0; w < words_; ++w) {
      if ((m[w] & gpu_mask_[w]) != 0) return false;
    }
    return true;
  }
  uint64_t* NodeMask(int id) { return &node_masks_[static_cast<size_t>(id) * words_]; }
  uint64_t* GroupMask(int root) { return &group_masks_[static_cast<size_t>(root) * words_]; }

  // ---- errors ----
  absl::Status Fail(const Node* node, std::string constraint, const Node* other, std::string other_constraint,
                    std::string colocation, std::string message) {
    if (conflict_ != nullptr) {
      conflict_->node = node->name();
      conflict_->constraint = std::move(constraint);
      conflict_->other_node = other == nullptr ? "" : other->name();
      conflict_->other_constraint = std::move(other_constraint);
      conflict_->colocation = std::move(colocation);
    }
    return absl::InvalidArgumentError(std::move(message));
  }

  std::string DeviceList() const {
    std::vector<std::string> names;
    for (int i = 0; i < num_devices_ && i < 8; ++i) names.push_back(devices_.name(i));
    if (num_devices_ > 8) names.push_back(absl::StrCat("... (", num_devices_, " in all)"));
    return absl::StrJoin(names, ", ");
  }

  // ---- pass 1: each node's own feasible set ----

  // The spec for `text`, parsed once per distinct string.
  absl::StatusOr<int> SpecIndex(const std::string& text) {
    auto it = spec_by_text_.find(text);
    if (it != spec_by_text_.end()) return it->second;
    auto parsed = ParseDeviceName(text);
    if (!parsed.ok()) return parsed.status();
    int index = AddSpec(*parsed);
    spec_by_text_.emplace(text, index);
    return index;
  }
  int AddSpec(const DeviceName& name) {
    Spec spec;
    spec.name = name;
    spec.text = DeviceNameToString(name);
    spec.any = spec.text.empty();
    spec.mask = Of(devices_.Matching(name));
    specs_.push_back(std::move(spec));
    return static_cast<int>(specs_.size()) - 1;
  }

  int KernelIndex(const NodeDef& def) {
    // Kernel registrations constrain type-valued attrs only, so the op and
    // those attrs decide the answer.
    std::vector<std::pair<std::string, std::string>> type_attrs;
    for (const auto& [name, value] : def.attr()) {
      if (value.value_case() == AttrValue::kType) {
        type_attrs.emplace_back(name, absl::StrCat(value.type()));
      } else if (value.value_case() == AttrValue::kList && value.list().type_size() > 0) {
        type_attrs.emplace_back(name, absl::StrJoin(value.list().type(), ","));
      }
    }
    std::sort(type_attrs.begin(), type_attrs.end());
    std::string key = def.op();
    for (const auto& [name, value] : type_attrs) absl::StrAppend(&key, "|", name, "=", value);
    auto it = kernel_by_key_.find(key);
    if (it != kernel_by_key_.end()) return it->second;
    KernelEntry entry;
    entry.mask = None();
    for (const std::string& type : device_types_) {
      if (!KernelRegistry::Global()->HasKernel(type, def)) continue;
      entry.types.push_back(type);
      for (int d = 0; d < num_devices_; ++d) {
        if (devices_.device(d)->device_type() == type) entry.mask[d / 64] |= uint64_t{1} << (d % 64);
      }
    }
    kernels_.push_back(std::move(entry));
    int index = static_cast<int>(kernels_.size()) - 1;
    kernel_by_key_.emplace(std::move(key), index);
    return index;
  }

  std::string KernelConstraint(const Node* node, int kernel) const {
    const std::vector<std::string>& types = kernels_[kernel].types;
    return absl::StrCat("kernels for op '", node->type_string(), "' (",
                        types.empty() ? "none" : absl::StrJoin(types, ", "), ")");
  }
  static std::string DeviceConstraint(const Node* node) {
    return absl::StrCat("device '", node->requested_device(), "'");
  }
  std::string PinnedConstraint(int d) const { return absl::StrCat("pinned to '", devices_.name(d), "'"); }

  // A did-you-mean for a spec that matches nothing: each device written with
  // only the parts the spec sets.
  std::string Suggest(const Spec& spec) const {
    std::vector<std::string> candidates;
    for (int d = 0; d < num_devices_; ++d) {
      const DeviceName& full = devices_.parsed_name(d);
      DeviceName cut;
      if (spec.name.has_job) cut.has_job = true, cut.job = full.job;
      if (spec.name.has_replica) cut.has_replica = true, cut.replica = full.replica;
      if (spec.name.has_task) cut.has_task = true, cut.task = full.task;
      if (spec.name.has_type) cut.has_type = true, cut.type = full.type;
      if (spec.name.has_id) cut.has_id = true, cut.id = full.id;
      std::string text = DeviceNameToString(cut);
      if (std::find(candidates.begin(), candidates.end(), text) == candidates.end()) candidates.push_back(text);
    }
    return ClosestMatch(spec.text, candidates);
  }

  absl::Status NodeConstraintsPass() {
    device_types_ = devices_.DeviceTypes();
    gpu_mask_.clear();
    for (int d = 0; d < num_devices_; ++d) {
      if (devices_.device(d)->device_type() != kDeviceGpu) continue;
      if (gpu_mask_.empty()) gpu_mask_.assign(words_, 0);
      gpu_mask_[d / 64] |= uint64_t{1} << (d % 64);
    }
    cons_.assign(n_, NodeConstraints());
    node_masks_.assign(static_cast<size_t>(n_) * words_, 0);
    frames_.clear();
    absl::Status s = BuildControlFlowInfo(*graph_, &frames_);
    if (!s.ok()) return s;
    // BuildControlFlowInfo puts an Enter in the frame it runs in (the
    // parent); for placement it belongs to the frame it feeds, or a Send
    // of its output would run inside that loop on another device.
    for (int id = 0; id < n_; ++id) {
      const Node* node = graph_->FindNodeId(id);
      if (node == nullptr || !node->IsEnter()) continue;
      std::string child;
      s = GetNodeAttr(node->def(), "frame_name", &child);
      if (!s.ok()) return s;
      frames_[id].parent_frame = frames_[id].frame_name;
      frames_[id].frame_name = child;
    }
    for (int id = 0; id < n_; ++id) {
      const Node* node = graph_->FindNodeId(id);
      if (node == nullptr) continue;
      NodeConstraints& c = cons_[id];
      c.in_frame = !frames_[id].frame_name.empty();
      c.kernel = KernelIndex(node->def());
      const KernelEntry& kernel = kernels_[c.kernel];
      if (Empty(kernel.mask.data())) {
        return Fail(node, KernelConstraint(node, c.kernel), nullptr, "", "",
                    absl::StrCat(NodeContext(node->def()), "no device of the set has a kernel for op ",
                                 node->type_string(), " with these attrs (device types: ",
                                 absl::StrJoin(device_types_, ", "), ")"));
      }
      std::vector<uint64_t> mask = kernel.mask;
      if (!node->requested_device().empty()) {
        auto spec_index = SpecIndex(node->requested_device());
        if (!spec_index.ok()) {
          return Fail(node, DeviceConstraint(node), nullptr, "", "",
                      absl::StrCat(NodeContext(node->def()), spec_index.status().message()));
        }
        if (!specs_[*spec_index].any) {
          c.spec = *spec_index;
          s = ApplySpec(node, &c, &mask);
          if (!s.ok()) return s;
        }
      }
      if (options_.pinned != nullptr) {
        auto it = options_.pinned->find(node->name());
        if (it != options_.pinned->end()) {
          if (it->second < 0 || it->second >= num_devices_) {
            return absl::InvalidArgumentError(absl::StrCat(NodeContext(node->def()), "pinned to device index ",
                                                           it->second, ", but the set has ", num_devices_,
                                                           " devices"));
          }
          c.pinned = it->second;
          if (!Has(mask.data(), c.pinned)) {
            std::string own = Describe(node, c, /*with_pinned=*/false);
            return Fail(node, PinnedConstraint(c.pinned), nullptr, own, "",
                        absl::StrCat(NodeContext(node->def()), "an earlier placement pinned it to '",
                                     devices_.name(c.pinned), "', which conflicts with its ", own));
          }
          mask = Single(c.pinned);
        }
      }
      std::copy(mask.begin(), mask.end(), NodeMask(id));
    }
    return absl::OkStatus();
  }

  // Narrows *mask (the kernel mask) by the node's requested spec, relaxing it
  // under soft placement.
  absl::Status ApplySpec(const Node* node, NodeConstraints* c, std::vector<uint64_t>* mask) {
    const Spec& spec = specs_[c->spec];
    std::vector<uint64_t> narrowed = *mask;
    And(spec.mask.data(), narrowed.data());
    if (!Empty(narrowed.data())) {
      *mask = std::move(narrowed);
      return absl::OkStatus();
    }
    if (options_.allow_soft_placement && (spec.name.has_type || spec.name.has_id)) {
      DeviceName relaxed = spec.name;
      relaxed.has_type = relaxed.has_id = false;
      auto relaxed_index = SpecIndex(DeviceNameToString(relaxed));
      if (relaxed_index.ok()) {
        std::vector<uint64_t> soft = *mask;
        And(specs_[*relaxed_index].mask.data(), soft.data());
        if (!Empty(soft.data())) {
          c->relaxed_spec = *relaxed_index;
          *mask = std::move(soft);
          return absl::OkStatus();
        }
      }
    }
    const Spec& shown = specs_[c->spec];
    if (Empty(shown.mask.data())) {
      std::string suggestion = Suggest(shown);
      return Fail(node, DeviceConstraint(node), nullptr, "", "",
                  absl::StrCat(NodeContext(node->def()), "device '", node->requested_device(),
                               "' matches no device of the set",
                               suggestion.empty() ? "" : absl::StrCat(" (did you mean '", suggestion, "'?)"),
                               "; the set has: ", DeviceList()));
    }
    return Fail(node, DeviceConstraint(node), nullptr, KernelConstraint(node, c->kernel), "",
                absl::StrCat(NodeContext(node->def()), "no device matching '", node->requested_device(),
                             "' has a kernel for op ", node->type_string(), " with these attrs (",
                             KernelConstraint(node, c->kernel), ")",
                             options_.allow_soft_placement ? "" : "; allow_soft_placement would ignore the request"));
  }

  std::string SpecConstraint(const Node* node, const NodeConstraints& c) const {
    if (c.relaxed_spec < 0) return DeviceConstraint(node);
    return absl::StrCat(DeviceConstraint(node), " (soft placement: '", specs_[c.relaxed_spec].text, "')");
  }

  // The node's constraints as one phrase.
  std::string Describe(const Node* node, const NodeConstraints& c, bool with_pinned = true) const {
    std::vector<std::string> parts;
    if (c.spec >= 0) parts.push_back(SpecConstraint(node, c));
    if (!IsFull(kernels_[c.kernel].mask.data())) parts.push_back(KernelConstraint(node, c.kernel));
    if (with_pinned && c.pinned >= 0) parts.push_back(PinnedConstraint(c.pinned));
    if (parts.empty()) return "no constraint";
    return absl::StrJoin(parts, " and ");
  }

  // Each constraint of a node with its mask, for naming the clashing pair.
  std::vector<std::pair<std::string, std::vector<uint64_t>>> Pieces(const Node* node) const {
    const NodeConstraints& c = cons_[node->id()];
    std::vector<std::pair<std::string, std::vector<uint64_t>>> pieces;
    if (c.spec >= 0) {
      pieces.emplace_back(SpecConstraint(node, c), specs_[c.relaxed_spec >= 0 ? c.relaxed_spec : c.spec].mask);
    }
    if (!IsFull(kernels_[c.kernel].mask.data())) {
      pieces.emplace_back(KernelConstraint(node, c.kernel), kernels_[c.kernel].mask);
    }
    if (c.pinned >= 0) pieces.emplace_back(PinnedConstraint(c.pinned), Single(c.pinned));
    return pieces;
  }

  // ---- pass 2: colocation groups ----
  int Find(int x) {
    int root = x;
    while (parent_[root] != root) root = parent_[root];
    while (parent_[x] != root) {
      int next = parent_[x];
      parent_[x] = root;
      x = next;
    }
    return root;
  }
  void Union(int a, int b, LinkKind kind) {
    links_.push_back({a, b, kind});
    int ra = Find(a), rb = Find(b);
    if (ra == rb) return;
    if (size_[ra] < size_[rb]) std::swap(ra, rb);
    parent_[rb] = ra;
    size_[ra] += size_[rb];
  }

  static std::string ResourceName(const Node* node) {
    const AttrValue* shared = FindAttr(node->def(), "shared_name");
    const AttrValue* container = FindAttr(node->def(), "container");
    std::string name = shared == nullptr || shared->s().empty() ? node->name() : shared->s();
    std::string c = container != nullptr ? container->s() : "";
    return c.empty() ? name : absl::StrCat(c, "/", name);
  }

  absl::Status ColocationPass() {
    parent_.resize(n_);
    size_.assign(n_, 1);
    for (int id = 0; id < n_; ++id) parent_[id] = id;
    absl::flat_hash_map<std::string, int> first_of_resource;
    absl::flat_hash_map<std::string, int> first_of_frame;
    for (int id = 0; id < n_; ++id) {
      const Node* node = graph_->FindNodeId(id);
      if (node == nullptr) continue;
      const std::string& frame = frames_[id].frame_name;
      if (!frame.empty()) first_of_frame.emplace(frame, id);
    }
    for (int id = 0; id < n_; ++id) {
      const Node* node = graph_->FindNodeId(id);
      if (node == nullptr) continue;
      // Ref edges: a node that takes a reference (Assign, Apply*) runs where
      // the reference lives. A node that only reads a ref output's value
      // (MatMul on a variable) may run elsewhere and gets the value through
      // Send/Recv, as a worker reads a parameter server's variables.
      for (const Edge* e : node->in_edges()) {
        if (e->IsControlEdge()) continue;
        if (IsRefType(node->input_type(e->dst_input))) {
          Union(e->src->id(), id, LinkKind::kRef);
        } else if (node->input_type(e->dst_input) == DT_RESOURCE) {
          // Resource edges, likewise (TensorFlow colocates a resource's
          // consumers with its handle): ReadVariableOp, AssignVariableOp,
          // ResourceApply* run where the VarHandleOp's ResourceMgr is.
          Union(e->src->id(), id, LinkKind::kResource);
        }
      }
      // _class.
      if (const AttrValue* cls = FindAttr(node->def(), "_class")) {
        std::vector<std::string> entries;
        if (cls->value_case() == AttrValue::kS) {
          entries.push_back(cls->s());
        } else if (cls->value_case() == AttrValue::kList && cls->list().i_size() == 0 &&
                   cls->list().f_size() == 0 && cls->list().b_size() == 0 && cls->list().type_size() == 0) {
          entries.assign(cls->list().s().begin(), cls->list().s().end());
        } else {
          return Fail(node, "_class", nullptr, "", "",
                      absl::StrCat(NodeContext(node->def()),
                                   "attr '_class' must be a string or a list of strings like 'loc:@node'"));
        }
        for (const std::string& entry : entries) {
          absl::string_view target = entry;
          if (!absl::ConsumePrefix(&target, "loc:@")) continue;
          const Node* other = graph_->FindNode(target);
          if (other == nullptr) {
            std::vector<std::string> names;
            for (const Node* n : graph_->nodes()) names.push_back(n->name());
            std::string suggestion = ClosestMatch(target, names);
            return Fail(node, absl::StrCat("colocation with '", target, "' (_class)"), nullptr, "", "",
                        absl::StrCat(NodeContext(node->def()), "_class '", entry, "' names no node of the graph",
                                     suggestion.empty() ? "" : absl::StrCat(" (did you mean '", suggestion, "'?)")));
          }
          Union(id, other->id(), LinkKind::kClass);
        }
      }
      // Shared resources.
      std::string key = SharedResourceKey(*node);
      if (!key.empty()) {
        auto [it, inserted] = first_of_resource.emplace(key, id);
        if (!inserted) Union(it->second, id, LinkKind::kSharedName);
      }
      // Loop frames: with the frame's first node; a frame's first node with
      // the enclosing frame's first node.
      const ControlFlowInfo& info = frames_[id];
      if (!info.frame_name.empty()) {
        int first = first_of_frame.at(info.frame_name);
        if (first != id) {
          Union(first, id, LinkKind::kFrame);
        } else if (!info.parent_frame.empty()) {
          auto parent = first_of_frame.find(info.parent_frame);
          if (parent != first_of_frame.end()) Union(parent->second, id, LinkKind::kFrame);
        }
      }
    }
    return absl::OkStatus();
  }

  // ---- pass 3: intersect per group ----
  absl::Status IntersectPass() {
    group_masks_.assign(static_cast<size_t>(n_) * words_, 0);
    std::vector<bool> started(n_, false);
    for (int id = 0; id < n_; ++id) {
      if (graph_->FindNodeId(id) == nullptr) continue;
      int root = Find(id);
      uint64_t* group = GroupMask(root);
      if (!started[root]) {
        started[root] = true;
        std::copy(NodeMask(id), NodeMask(id) + words_, group);
        continue;
      }
      if (Disjoint(group, NodeMask(id))) return GroupConflict(id, root);
      And(NodeMask(id), group);
    }
    return absl::OkStatus();
  }

  std::string LinkTag(const Link& link) const {
    switch (link.kind) {
      case LinkKind::kRef:
        return "(ref edge)";
      case LinkKind::kResource:
        return "(resource edge)";
      case LinkKind::kClass:
        return "(_class)";
      case LinkKind::kSharedName:
        return "(shared_name)";
      case LinkKind::kFrame:
        return absl::StrCat("(loop frame '", frames_[link.a].frame_name, "')");
    }
    return "";
  }
  std::string LinkText(const Link& link) const {
    const Node* a = graph_->FindNodeId(link.a);
    const Node* b = graph_->FindNodeId(link.b);
    switch (link.kind) {
      case LinkKind::kRef:
        return absl::StrCat("'", a->name(), "' -> '", b->name(), "' is a ref edge");
      case LinkKind::kResource:
        return absl::StrCat("'", a->name(), "' -> '", b->name(), "' is a resource edge");
      case LinkKind::kClass:
        return absl::StrCat("'", a->name(), "' has _class 'loc:@", b->name(), "'");
      case LinkKind::kSharedName:
        return absl::StrCat("'", a->name(), "' and '", b->name(), "' share resource '", ResourceName(a),
                            "' (shared_name)");
      case LinkKind::kFrame: {
        const std::string& fa = frames_[link.a].frame_name;
        const std::string& fb = frames_[link.b].frame_name;
        return fa == fb ? absl::StrCat("'", a->name(), "' and '", b->name(), "' run in loop frame '", fa, "'")
                        : absl::StrCat("'", a->name(), "' (frame '", fa, "') and '", b->name(), "' (frame '", fb,
                                       "') run in one loop");
      }
    }
    return "";
  }

  // `id` cannot join its group: find the earlier member it clashes with and
  // the colocation path between them.
  absl::Status GroupConflict(int id, int root) {
    const Node* node = graph_->FindNodeId(id);
    int other = -1, last_narrowing = -1;
    for (int j = 0; j < id; ++j) {
      if (graph_->FindNodeId(j) == nullptr || Find(j) != root) continue;
      if (Disjoint(NodeMask(j), NodeMask(id))) {
        other = j;
        break;
      }
      if (!IsFull(NodeMask(j))) last_narrowing = j;
    }
    if (other < 0) other = last_narrowing;  // three or more constraints clash together
    CHECK(other >= 0) << "a group conflict needs an earlier constraining member";
    const Node* other_node = graph_->FindNodeId(other);

    // The two clashing constraints: single pieces when a pair of them is
    // disjoint, else each node's whole description.
    std::string mine = Describe(node, cons_[id]), theirs = Describe(other_node, cons_[other]);
    bool found = false;
    for (const auto& [m_text, m_mask] : Pieces(node)) {
      for (const auto& [o_text, o_mask] : Pieces(other_node)) {
        if (!found && Disjoint(m_mask.data(), o_mask.data())) {
          mine = m_text;
          theirs = o_text;
          found = true;
        }
      }
    }

    // Shortest colocation path from `id` to `other` (BFS over the links).
    std::vector<std::vector<int>> adjacent(n_);
    for (int l = 0; l < static_cast<int>(links_.size()); ++l) {
      adjacent[links_[l].a].push_back(l);
      adjacent[links_[l].b].push_back(l);
    }
    std::vector<int> via(n_, -1);
    std::vector<bool> seen(n_, false);
    std::deque<int> queue = {id};
    seen[id] = true;
    while (!queue.empty() && !seen[other]) {
      int x = queue.front();
      queue.pop_front();
      for (int l : adjacent[x]) {
        int y = links_[l].a == x ? links_[l].b : links_[l].a;
        if (seen[y]) continue;
        seen[y] = true;
        via[y] = l;
        queue.push_back(y);
      }
    }
    std::vector<int> path;  // link indices from `other` back to `id`
    for (int x = other; x != id && via[x] >= 0;) {
      path.push_back(via[x]);
      const Link& l = links_[via[x]];
      x = l.a == x ? l.b : l.a;
    }
    std::reverse(path.begin(), path.end());
    std::string colocation, chain;
    if (!path.empty()) {
      const Link& first = links_[path.front()];
      int next = first.a == id ? first.b : first.a;
      colocation = absl::StrCat("colocation with '", graph_->FindNodeId(next)->name(), "' ", LinkTag(first));
      std::vector<std::string> steps;
      for (int l : path) steps.push_back(LinkText(links_[l]));
      chain = absl::StrJoin(steps, ", and ");
    }
    return Fail(node, mine, other_node, theirs, colocation,
                absl::StrCat(NodeContext(node->def()), "cannot satisfy both its ", mine, " and the ", theirs,
                             " of node '", other_node->name(), "', with which it must share a device: ", chain));
  }

  // ---- pass 3b: simulated execution over the cost model ----

  // When `e`'s value is ready on device `d`: its source's finish time, plus a
  // transfer when the source's group sits on another device. A source not
  // yet decided will follow its consumer (no transfer).
  double ArrivalNs(const Edge* e, int d, const std::vector<int>& group_device,
                   const std::vector<double>& finish) {
    const double at = finish[e->src->id()];
    if (e->IsControlEdge()) return at;
    const int from = group_device[Find(e->src->id())];
    if (from < 0 || from == d) return at;
    return at + cost_->TransferNs(cost_->OutputBytes(e->src, e->src_output));
  }
  static bool HasDataInput(const Node* node) {
    for (const Edge* e : node->in_edges()) {
      if (!e->IsControlEdge()) return true;
    }
    return false;
  }

  absl::Status CostPass() {
    cost_ = options_.cost_model;
    // The simulated step: the roots and everything they depend on.
    std::vector<bool> simulated(n_, true);
    if (!options_.cost_roots.empty()) {
      std::vector<Node*> roots;
      for (const std::string& name : options_.cost_roots) {
        Node* root = graph_->FindNode(name);
        if (root == nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat("cost-model placement: root '", name, "' is not a node of the graph"));
        }
        roots.push_back(root);
      }
      simulated = ReverseReachable(*graph_, roots);
    }
    std::vector<int> group_device(n_, -1);  // by group root
    for (int id = 0; id < n_; ++id) {
      if (graph_->FindNodeId(id) == nullptr || Find(id) != id) continue;
      const uint64_t* mask = GroupMask(id);
      const int lowest = Lowest(mask);
      std::vector<uint64_t> single = Single(lowest);
      if (std::equal(single.begin(), single.end(), mask)) group_device[id] = lowest;
    }
    std::vector<double> finish(n_, 0.0);
    std::vector<double> free_at(num_devices_, 0.0);
    for (Node* node : TopologicalOrder(*graph_)) {
      const int id = node->id();
      if (!simulated[id]) continue;
      const int root = Find(id);
      if (group_device[root] < 0) {
        if (!HasDataInput(node)) continue;  // waits for a consumer or a group member
        const uint64_t* mask = GroupMask(root);
        int best = -1;
        double best_finish = 0;
        for (int d = 0; d < num_devices_; ++d) {
          if (!Has(mask, d)) continue;
          double ready = 0;
          for (const Edge* e : node->in_edges()) ready = std::max(ready, ArrivalNs(e, d, group_device, finish));
          const double done = std::max(ready, free_at[d]) + cost_->ComputeNs(node);
          if (best < 0 || done < best_finish) best = d, best_finish = done;
        }
        group_device[root] = best;
        // Inputs that waited (sources) follow their first consumer.
        for (const Edge* e : node->in_edges()) {
          const int src_root = Find(e->src->id());
          if (!e->IsControlEdge() && group_device[src_root] < 0 && Has(GroupMask(src_root), best)) {
            group_device[src_root] = best;
          }
        }
      }
      const int d = group_device[root];
      double ready = 0;
      for (const Edge* e : node->in_edges()) ready = std::max(ready, ArrivalNs(e, d, group_device, finish));
      finish[id] = std::max(ready, free_at[d]) + cost_->ComputeNs(node);
      free_at[d] = finish[id];
    }
    cost_decided_.assign(n_, false);
    for (int id = 0; id < n_; ++id) {
      if (graph_->FindNodeId(id) == nullptr || Find(id) != id || group_device[id] < 0) continue;
      std::vector<uint64_t> single = Single(group_device[id]);
      std::copy(single.begin(), single.end(), GroupMask(id));
      cost_decided_[id] = true;
    }
    return absl::OkStatus();
  }

  // ---- pass 4: choose ----
  bool Unconstrained(int id) {
    const NodeConstraints& c = cons_[id];
    if (!cost_decided_.empty() && cost_decided_[Find(id)]) return false;
    return c.spec < 0 && c.pinned < 0 && !c.in_frame && size_[Find(id)] == 1;
  }
  // The source id of the node's lowest-port data input, or -1.
  int FirstDataInput(int id) const {
    const Edge* first = nullptr;
    for (const Edge* e : graph_->FindNodeId(id)->in_edges()) {
      if (e->IsControlEdge()) continue;
      if (first == nullptr || e->dst_input < first->dst_input) first = e;
    }
    return first == nullptr ? -1 : first->src->id();
  }

  void ChoosePass() {
    choice_.assign(n_, -1);
    for (int id = 0; id < n_; ++id) {
      if (graph_->FindNodeId(id) == nullptr || Unconstrained(id)) continue;
      choice_[id] = Preferred(GroupMask(Find(id)));
    }
    // Unconstrained nodes follow their first data input; walk each chain
    // iteratively (chains can be 100k long) and resolve it from its start.
    std::vector<bool> on_stack(n_, false);
    std::vector<int> stack;
    for (int id = 0; id < n_; ++id) {
      if (graph_->FindNodeId(id) == nullptr || choice_[id] >= 0) continue;
      int x = id;
      while (x >= 0 && choice_[x] < 0 && !on_stack[x]) {
        on_stack[x] = true;
        stack.push_back(x);
        x = FirstDataInput(x);  // x unconstrained here: constrained nodes have a choice
      }
      while (!stack.empty()) {
        int y = stack.back();
        stack.pop_back();
        on_stack[y] = false;
        int input = FirstDataInput(y);
        const uint64_t* mask = GroupMask(Find(y));
        int from = input >= 0 ? choice_[input] : -1;
        choice_[y] = from >= 0 && Has(mask, from) && AsPreferred(mask, from) ? from : Preferred(mask);
      }
    }
  }

  const PlacementOptions& options_;
  const DeviceSet& devices_;
  Graph* graph_;
  PlacementConflict* conflict_;
  const int num_devices_;
  const int words_;
  const int n_;

  std::vector<std::string> device_types_;
  std::vector<uint64_t> gpu_mask_;  // the GPU devices; empty when there are none
  std::vector<ControlFlowInfo> frames_;
  std::vector<Spec> specs_;
  absl::flat_hash_map<std::string, int> spec_by_text_;
  std::vector<KernelEntry> kernels_;
  absl::flat_hash_map<std::string, int> kernel_by_key_;
  std::vector<NodeConstraints> cons_;
  std::vector<uint64_t> node_masks_;   // n_ x words_
  std::vector<uint64_t> group_masks_;  // n_ x words_, at each root
  std::vector<int> parent_;
  std::vector<int> size_;
  std::vector<Link> links_;
  std::vector<int> choice_;
  const CostModel* cost_ = nullptr;
  std::vector<bool> cost_decided_;  // by group root: the simulation chose its device
};

}  // namespace

std::string SharedResourceKey(const Node& node) {
  if (!node.IsStateful()) return "";
  const AttrValue* shared = FindAttr(node.def(), "shared_name");
  if (shared == nullptr || shared->value_case() != AttrValue::kS) return "";
  const AttrValue* container = FindAttr(node.def(), "container");
  std::string family = node.type_string() == "Variable" ? "VariableV2" : node.type_string();
  return absl::StrCat(family, "|", container != nullptr ? container->s() : "", "|",
                      shared->s().empty() ? node.name() : shared->s());
}

absl::Status Place(const PlacementOptions& options, Graph* graph, PlacementConflict* conflict) {
  if (options.devices == nullptr) return absl::InvalidArgumentError("Place: PlacementOptions.devices is not set");
  return Placer(options, graph, conflict).Run();
}

}  // namespace sluice
