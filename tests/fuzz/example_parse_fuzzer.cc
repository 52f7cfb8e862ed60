// Fuzz target: tf.Example parsing, the ParseExample kernel (inputs/parse_example_kernel.cc) run
// through a Session on serialized examples from the fuzzer. The graph is fixed: dense features
// "image" (string [1]), "label" (int64 [], default -1) and "weights" (float [2], required). The
// first byte picks the input's shape: bit 0 set, a scalar (one example: the rest of the input);
// clear, a batch of the pieces (uint16 length, then bytes) in the rest. Asserted: no crash;
// every error is InvalidArgument naming the example; a parse that succeeds gives outputs of the
// batch's shape.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/framework/graph.pb.h"
#include "engine/runtime/session.h"
#include "inputs/input_builders.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

Session* ParseSession() {
  static Session* session = [] {
    GraphDef graph;
    InputGraph in(&graph);
    in.AddNode("serialized", "Placeholder", {}, {{"dtype", MakeAttr(DT_STRING)}});
    in.AddConst("names", Tensor(DT_STRING, TensorShape({0})));
    in.AddConst("k0", Tensor::Scalar<tstring>("image"));
    in.AddConst("k1", Tensor::Scalar<tstring>("label"));
    in.AddConst("k2", Tensor::Scalar<tstring>("weights"));
    in.AddConst("d0", Tensor(DT_STRING, TensorShape({0})));
    in.AddConst("d1", Tensor::Scalar<int64_t>(-1));
    in.AddConst("d2", Tensor(DT_FLOAT, TensorShape({0})));
    AttrValue shapes;
    TensorShape({1}).AsProto(shapes.mutable_list()->add_shape());
    TensorShape({}).AsProto(shapes.mutable_list()->add_shape());
    TensorShape({2}).AsProto(shapes.mutable_list()->add_shape());
    in.AddNode("parse", "ParseExample", {"serialized", "names", "k0", "k1", "k2", "d0", "d1", "d2"},
               {{"Nsparse", MakeAttr(int64_t{0})},
                {"Ndense", MakeAttr(int64_t{3})},
                {"sparse_types", MakeAttr(std::vector<DataType>{})},
                {"Tdense", MakeAttr(std::vector<DataType>{DT_STRING, DT_INT64, DT_FLOAT})},
                {"dense_shapes", shapes}});
    SessionOptions options;
    options.inter_op_threads = 1;
    auto s = NewSession(options);
    FUZZ_CHECK(s.ok(), "NewSession: %s", s.status().ToString().c_str());
    const absl::Status created = (*s)->Create(graph);
    FUZZ_CHECK(created.ok(), "Create: %s", created.ToString().c_str());
    return s->release();
  }();
  return session;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  fuzz::InputBytes input(data, size);
  const bool scalar = input.Byte() & 1;
  Tensor serialized;
  int64_t batch = 0;
  if (scalar) {
    serialized = Tensor::Scalar<tstring>(std::string(input.rest()));
  } else {
    std::vector<tstring> examples;
    while (!input.empty() && examples.size() < 64) examples.emplace_back(std::string(input.Piece()));
    batch = static_cast<int64_t>(examples.size());
    serialized = Tensor::FromVector<tstring>(examples);
  }
  std::vector<Tensor> out;
  absl::Status s = ParseSession()->Run({{"serialized", serialized}}, {"parse:0", "parse:1", "parse:2"}, {}, &out);
  if (!s.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(s), "unexpected status: %s", s.ToString().c_str());
    FUZZ_CHECK(absl::StrContains(s.message(), "example"), "error without the example: %s", s.ToString().c_str());
    return 0;
  }
  FUZZ_CHECK(out.size() == 3, "%zu outputs", out.size());
  const TensorShape label_shape = scalar ? TensorShape({}) : TensorShape({batch});
  FUZZ_CHECK(out[1].shape() == label_shape, "label shape %s", out[1].shape().DebugString().c_str());
  FUZZ_CHECK(out[2].NumElements() == 2 * (scalar ? 1 : batch), "weights hold %lld values",
             static_cast<long long>(out[2].NumElements()));
  return 0;
}
