// Fuzz target: a GraphDef from outside, through everything a Session does with it: import and
// validation, shape inference, placement, the step graph's passes, kernel construction, and one
// run (engine/ops, engine/kernels, and the input pipeline's compute ops, inputs/). The input is
// an options byte and a GraphDef: bit 0 of the byte set, binary (else text); bit 1 set, the run
// fetches every output nothing in the graph reads (so the passes may fold, bypass and remove
// what lies before them), else it runs every node as a target (kept as it is). A graph with a
// loop is created (imported, its shapes inferred) but not run: it may never stop. Asserted: no
// crash, no sanitizer report.
// Graphs that graph_filter.h rules out are skipped (blocking or file-touching ops, sizes that
// could legitimately need gigabytes).
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/framework/graph.pb.h"
#include "engine/graph/graph_constructor.h"
#include "engine/runtime/session.h"
#include "google/protobuf/text_format.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/graph_filter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  fuzz::InputBytes input(data, size);
  const uint8_t options_byte = input.Byte();
  GraphDef graph;
  const std::string bytes(input.rest());
  const bool parsed = (options_byte & 1) ? graph.ParseFromString(bytes)
                                         : google::protobuf::TextFormat::ParseFromString(bytes, &graph);
  if (!parsed || !fuzz::Runnable(graph)) return 0;

  SessionOptions options;
  options.inter_op_threads = 1;
  auto session = NewSession(options);
  FUZZ_CHECK(session.ok(), "NewSession: %s", session.status().ToString().c_str());
  if ((*session)->Create(graph).ok() && !fuzz::MayLoop(graph)) {
    std::vector<std::string> fetches, targets;
    if (options_byte & 2) {
      auto imported = GraphFromGraphDef(graph);
      if (imported.ok()) {
        for (Node* n : (*imported)->nodes()) {
          std::vector<bool> read(n->num_outputs(), false);
          for (const Edge* e : n->out_edges()) {
            if (!e->IsControlEdge()) read[e->src_output] = true;
          }
          for (int i = 0; i < n->num_outputs(); ++i) {
            if (!read[i]) fetches.push_back(n->name() + ":" + std::to_string(i));
          }
          if (n->num_outputs() == 0 && n->out_edges().empty()) targets.push_back(n->name());
        }
      }
    } else {
      for (const NodeDef& node : graph.node()) targets.push_back(node.name());
    }
    std::vector<Tensor> outputs;
    (void)(*session)->Run({}, fetches, targets, &outputs);
  }
  (void)(*session)->Close();
  session->reset();
  Session::Reset({""});  // variables of this input must not meet the next one
  return 0;
}
