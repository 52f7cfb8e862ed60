// Chrome trace JSON: parses as JSON (protobuf's JSON parser into a google.protobuf.Struct), one
// complete event per node with the right pid/tid/ts/dur, names escaped, and a real Session
// step's stats traced node for node.
#include "monitoring/trace.h"

#include <set>

#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

absl::StatusOr<Struct> ParseJson(const std::string& json) {
  Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(json, &s);
  if (!status.ok()) return absl::InvalidArgumentError(std::string(status.message()));
  return s;
}

std::vector<const Struct*> CompleteEvents(const Struct& trace) {
  std::vector<const Struct*> out;
  for (const Value& v : trace.fields().at("traceEvents").list_value().values()) {
    if (v.struct_value().fields().at("ph").string_value() == "X") out.push_back(&v.struct_value());
  }
  return out;
}

TEST(JsonQuoteTest, EscapesAndReplacesInvalidUtf8) {
  EXPECT_EQ(JsonQuote("plain/name_1"), "\"plain/name_1\"");
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(JsonQuote("bad\xff\xc3"), "\"bad\\ufffd\\ufffd\"");
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a UTF-16 surrogate
}

TEST(TraceTest, OneCompleteEventPerNode) {
  std::vector<NodeExecStats> cpu = {
      {"matmul", "MatMul", 0, 0, 1'000'000, 1'250'500, 7},
      {"weird \"name\"\\\n\xff", "Add", 1, 2, 1'100'000, 1'100'000, 8},
  };
  std::vector<NodeExecStats> gpu = {{"recv", "_Recv", 0, 0, 900'000, 2'000'000, 9}};
  std::vector<DeviceStepStats> devices = {{"/device:CPU:0", cpu}, {"/device:GPU:0", gpu}};
  const std::string json = StepStatsToChromeTrace(devices);
  auto trace = ParseJson(json);
  ASSERT_TRUE(trace.ok()) << trace.status() << "\n" << json;
  std::vector<const Struct*> events = CompleteEvents(*trace);
  ASSERT_EQ(events.size(), 3u);
  auto field = [](const Struct* e, const char* k) { return e->fields().at(k); };
  EXPECT_EQ(field(events[0], "name").string_value(), "matmul");
  EXPECT_EQ(field(events[0], "pid").number_value(), 0);
  EXPECT_EQ(field(events[0], "tid").number_value(), 7);
  EXPECT_DOUBLE_EQ(field(events[0], "ts").number_value(), 100.0);  // from the earliest start (900 us)
  EXPECT_DOUBLE_EQ(field(events[0], "dur").number_value(), 250.5);
  EXPECT_EQ(field(events[0], "args").struct_value().fields().at("op").string_value(), "MatMul");
  EXPECT_EQ(field(events[1], "name").string_value(), "weird \"name\"\\\n\xef\xbf\xbd");
  EXPECT_EQ(field(events[1], "dur").number_value(), 0);
  EXPECT_EQ(field(events[1], "args").struct_value().fields().at("iter_id").number_value(), 2);
  EXPECT_EQ(field(events[2], "pid").number_value(), 1);
  EXPECT_EQ(field(events[2], "ts").number_value(), 0);
  // Device names are in process_name metadata events.
  std::set<std::string> names;
  for (const Value& v : trace->fields().at("traceEvents").list_value().values()) {
    const auto& f = v.struct_value().fields();
    if (f.at("ph").string_value() == "M") names.insert(f.at("args").struct_value().fields().at("name").string_value());
  }
  EXPECT_EQ(names, (std::set<std::string>{"/device:CPU:0", "/device:GPU:0"}));
}

TEST(TraceTest, EmptyStepIsValidJson) {
  auto trace = ParseJson(StepStatsToChromeTrace(std::vector<NodeExecStats>{}));
  ASSERT_TRUE(trace.ok());
  EXPECT_TRUE(CompleteEvents(*trace).empty());
}

TEST(TraceTest, RealSessionStep) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
  std::string y = b.Binary("MatMul", "y", x, x, DT_FLOAT);
  b.FindNode(y)->mutable_attr()->insert({"transpose_a", MakeAttr(false)});
  b.FindNode(y)->mutable_attr()->insert({"transpose_b", MakeAttr(false)});
  std::string z = b.Binary("Add", "z", y, x, DT_FLOAT);
  // Every node must run to be traced: folding would compute this graph of
  // constants when the step is built.
  SessionOptions session_options;
  session_options.enable_constant_folding = false;
  auto session = NewSession(session_options);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  RunOptions options;
  options.collect_step_stats = true;
  RunMetadata metadata;
  std::vector<Tensor> out;
  absl::Status s = (*session)->Run(options, {}, {z}, {}, &out, &metadata);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_FALSE(metadata.step_stats.empty());
  auto trace = ParseJson(StepStatsToChromeTrace(metadata.step_stats));
  ASSERT_TRUE(trace.ok()) << trace.status();
  std::vector<const Struct*> events = CompleteEvents(*trace);
  ASSERT_EQ(events.size(), metadata.step_stats.size());
  std::multiset<std::string> traced, recorded;
  for (const Struct* e : events) traced.insert(e->fields().at("name").string_value());
  for (const NodeExecStats& n : metadata.step_stats) recorded.insert(n.node_name);
  EXPECT_EQ(traced, recorded);
  for (const char* node : {"x", "y", "z"}) EXPECT_EQ(traced.count(node), 1u) << node;
}

}  // namespace
}  // namespace sluice
