// Fuzz target: a GraphDef from outside, through everything a Session does with it: import and
// validation, shape inference, placement, kernel construction, and one run of every node
// (engine/ops, engine/kernels, and the input pipeline's compute ops, inputs/). The input is a
// text-format GraphDef (the first byte 1: binary). Asserted: no crash, no sanitizer report.
// Graphs that graph_filter.h rules out are skipped (blocking or file-touching ops, sizes that
// could legitimately need gigabytes).
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/framework/graph.pb.h"
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
  if ((*session)->Create(graph).ok()) {
    std::vector<std::string> targets;
    for (const NodeDef& node : graph.node()) targets.push_back(node.name());
    std::vector<Tensor> outputs;
    (void)(*session)->Run({}, {}, targets, &outputs);
  }
  (void)(*session)->Close();
  session->reset();
  Session::Reset({""});  // variables of this input must not meet the next one
  return 0;
}
