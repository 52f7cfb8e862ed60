// infer_shapes: Sluice's static shape inference over a binary GraphDef (one
// serialized by TensorFlow, say), printed one output per line as
//   <node>:<port>\t<shape>
// with <shape> as PartialShape::DebugString writes it ("[8,?]", "<unknown>").
// shape_parity.py compares these lines with TensorFlow's own inferred shapes.
//
//   infer_shapes GRAPH.pb
//
// Exits 1 with the status on stderr when the file is unreadable, the graph is
// rejected, or a shape function fails. Links the same op libraries as train.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/graph.pb.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/shape_refiner.h"

namespace sluice {
namespace {

absl::Status Main(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  GraphDef graph_def;
  if (!graph_def.ParseFromString(bytes.str())) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a binary GraphDef"));
  }
  auto graph = GraphFromGraphDef(graph_def);
  if (!graph.ok()) return graph.status();
  ShapeRefiner refiner;
  absl::Status s = refiner.InferShapes(**graph);
  if (!s.ok()) return s;
  for (const Node* n : (*graph)->nodes()) {
    for (int i = 0; i < n->num_outputs(); ++i) {
      std::cout << n->name() << ':' << i << '\t' << refiner.OutputShape(n, i).DebugString() << '\n';
    }
  }
  return std::cout.flush() ? absl::OkStatus() : absl::UnavailableError("cannot write standard output");
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: infer_shapes GRAPH.pb\n");
    return 1;
  }
  absl::Status s = sluice::Main(argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "infer_shapes: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
