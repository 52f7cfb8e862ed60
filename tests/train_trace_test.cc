// `train --trace_steps=2-3` on the CNN (configs/fashion_cnn.pbtxt): each traced step's
// <run_dir>/traces/step_N.json parses as JSON (protobuf's JSON parser into a Struct) and holds
// valid Chrome trace events: a process_name metadata event for the device, and exactly one
// complete ("ph":"X") event per node the step executed (otherData.executed_graph_nodes, the
// session's count), each with a unique node name, its op, non-negative ts/dur, pid and tid.
// The run is stopped with SIGTERM after the traces appear (exit 143), so no evaluation runs.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

extern char** environ;

namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

std::string Runfile(const std::string& path) { return std::string(std::getenv("TEST_SRCDIR")) + "/sluice/" + path; }

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Value* Get(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

class TrainTraceTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid_ = -1;
};

TEST_F(TrainTraceTest, TracedCnnStepsHaveOneCompleteEventPerExecutedNode) {
  const std::string tmp = std::getenv("TEST_TMPDIR");
  const std::string run_dir = tmp + "/run";
  const std::string log = tmp + "/train.log";
  std::vector<std::string> args = {Runfile("cmd/train/train"),
                                   Runfile("configs/fashion_cnn.pbtxt"),
                                   "--run_dir=" + run_dir,
                                   "--trace_steps=2-3",
                                   "--set", "train.steps=1000",
                                   "--set", "train.eval_every_steps=0",
                                   "--set", "checkpoint.every_steps=0",
                                   "--set", "input.train.shuffle.capacity=1000",
                                   "--set", "input.train.shuffle.min_after_dequeue=200",
                                   "--set", "input.train.batch_size=32"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  ASSERT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);

  // Step 3's trace is written right after step 3; then stop the run (it checkpoints, exits 143).
  const std::string step3 = run_dir + "/traces/step_3.json";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  int status = 0;
  bool exited = false;
  while (!Exists(step3) && std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(exited) << "train exited early:\n" << ReadFile(log);
  ASSERT_TRUE(Exists(step3)) << "no trace after 180 s:\n" << ReadFile(log);
  ::kill(pid_, SIGTERM);
  ASSERT_EQ(::waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 143) << ReadFile(log);
  EXPECT_FALSE(Exists(run_dir + "/traces/step_1.json"));
  EXPECT_FALSE(Exists(run_dir + "/traces/step_4.json")) << "only steps 2-3 are traced";

  for (int step : {2, 3}) {
    SCOPED_TRACE(step);
    const std::string json = ReadFile(run_dir + "/traces/step_" + std::to_string(step) + ".json");
    Struct trace;
    auto s = google::protobuf::util::JsonStringToMessage(json, &trace);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const Value* other = Get(trace, "otherData");
    ASSERT_NE(other, nullptr);
    const Value* executed = Get(other->struct_value(), "executed_graph_nodes");
    ASSERT_NE(executed, nullptr);
    const int expected = std::stoi(executed->string_value());
    EXPECT_EQ(Get(other->struct_value(), "step")->string_value(), std::to_string(step));
    EXPECT_GT(expected, 50);

    const Value* events = Get(trace, "traceEvents");
    ASSERT_NE(events, nullptr);
    ASSERT_TRUE(events->has_list_value());
    int complete = 0, metadata = 0;
    std::set<std::string> names, ops;
    for (const Value& v : events->list_value().values()) {
      ASSERT_TRUE(v.has_struct_value());
      const Struct& e = v.struct_value();
      const Value* ph = Get(e, "ph");
      const Value* name = Get(e, "name");
      ASSERT_TRUE(ph && name && Get(e, "pid"));
      if (ph->string_value() == "M") {
        ++metadata;
        EXPECT_EQ(name->string_value(), "process_name");
        EXPECT_NE(Get(e, "args")->struct_value().fields().at("name").string_value().find("CPU:0"), std::string::npos);
        continue;
      }
      ASSERT_EQ(ph->string_value(), "X");
      ++complete;
      EXPECT_TRUE(names.insert(name->string_value()).second) << "node traced twice: " << name->string_value();
      const Value* ts = Get(e, "ts");
      const Value* dur = Get(e, "dur");
      ASSERT_TRUE(ts && dur && Get(e, "tid"));
      EXPECT_GE(ts->number_value(), 0);
      EXPECT_GE(dur->number_value(), 0);
      const Value* args_value = Get(e, "args");
      ASSERT_NE(args_value, nullptr);
      const Value* op = Get(args_value->struct_value(), "op");
      ASSERT_NE(op, nullptr);
      ops.insert(op->string_value());
    }
    EXPECT_EQ(metadata, 1);
    EXPECT_EQ(complete, expected) << "one complete event per executed node";
    // The convolutions run fused with their BiasAdd and Relu (the session's
    // default, engine/graph/optimizer_fusion.h); the gradient MatMuls do not.
    for (const char* op : {"_FusedConv2D", "_FusedMatMul", "MaxPool", "MatMul", "QueueDequeueMany"}) {
      EXPECT_TRUE(ops.count(op)) << "no " << op << " event";
    }
  }
  const std::string out = ReadFile(log);
  EXPECT_NE(out.find("stopped by signal"), std::string::npos) << out;
}

}  // namespace
