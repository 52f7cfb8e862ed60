// What the tests that run a whole training graph in this process share
// (batch_norm_layer_test, augment_layer_test, training_step_reference_test):
// the Debian Fashion-MNIST files and a fixture that skips without them, the
// training graph of a config (defaults applied and validated as `train`
// does), and a session that ran its init op with the training input started
// as `train` starts it (training::InputHook: the pipeline's init ops and
// queue runners).
// Thread safety: one test's thread.
#ifndef SLUICE_TESTS_TRAINING_GRAPH_TESTLIB_H_
#define SLUICE_TESTS_TRAINING_GRAPH_TESTLIB_H_

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "configs/load.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"
#include "models/training/input_hook.h"
#include "models/training_graph.h"

namespace sluice {
namespace training_graph_test {

constexpr char kTrainImages[] = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
constexpr char kTrainLabels[] = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz";
constexpr char kTestImages[] = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
constexpr char kTestLabels[] = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";

// An experiment's `input` section over these files: pixels scaled to [0, 1],
// batches of 64 for training and 50 for evaluation.
inline std::string FashionMnistInput() {
  return std::string("input {\n  train { idx { images: \"") + kTrainImages + "\" labels: \"" + kTrainLabels +
         "\" } scale_to_unit: true batch_size: 64 }\n  eval { idx { images: \"" + kTestImages + "\" labels: \"" +
         kTestLabels + "\" } scale_to_unit: true batch_size: 50 }\n}\n";
}

// The first Fashion-MNIST image file that cannot be read ("" when both can):
// a test skips with it.
inline std::string MissingFashionMnist() {
  for (const char* path : {kTrainImages, kTestImages}) {
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) return path;
    std::fclose(f);
  }
  return "";
}

// A test that needs the data set skips without it.
class FashionMnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = MissingFashionMnist();
    if (!missing.empty()) GTEST_SKIP() << "Fashion-MNIST is not installed (" << missing << ")";
  }
};

// The training graph of `loaded` after `overrides` (--set syntax), with the
// defaults applied and the experiment validated.
inline absl::Status BuildTrainingGraphOf(config::LoadedExperiment* loaded, const std::vector<std::string>& overrides,
                                         models::TrainingGraph* tg) {
  absl::Status s = config::ApplyOverrides(overrides, &loaded->experiment);
  if (!s.ok()) return s;
  config::ApplyDefaults(&loaded->experiment);
  config::ConfigErrors errors(loaded->path);
  config::Validate(*loaded, &errors);
  if (!errors.empty()) return errors.ToStatus();
  s = models::BuildTrainingGraph(*loaded, tg, &errors);
  if (!s.ok()) return s;
  return errors.empty() ? absl::OkStatus() : errors.ToStatus();
}

// A session on a training graph: created, its init op run, its training
// input started; Close (or the destructor) stops the input.
class TrainingSession {
 public:
  static absl::StatusOr<std::unique_ptr<TrainingSession>> Start(const models::TrainingGraph& tg,
                                                                int inter_op_threads) {
    SessionOptions options;
    options.inter_op_threads = inter_op_threads;
    auto session = NewSession(options);
    if (!session.ok()) return session.status();
    std::unique_ptr<TrainingSession> started(new TrainingSession(tg, std::move(session).value()));
    absl::Status s = started->session_->Create(tg.graph);
    std::vector<Tensor> unused;
    if (s.ok()) s = started->session_->Run({}, {}, {tg.init_op}, &unused);
    if (s.ok()) s = started->input_.Begin(started->session_.get(), training::LoopStart{});
    if (!s.ok()) return s;
    started->running_ = true;
    return started;
  }
  ~TrainingSession() { Close(); }

  Session* session() { return session_.get(); }
  void Close() {
    if (running_) input_.Close(training::LoopEnd{});
    running_ = false;
  }

 private:
  static training::InputHookOptions InputOptions(const models::TrainingGraph& tg) {
    training::InputHookOptions options;
    options.train = tg.train_input;
    return options;
  }
  TrainingSession(const models::TrainingGraph& tg, std::unique_ptr<Session> session)
      : session_(std::move(session)), input_(InputOptions(tg), &input_log_) {}

  std::unique_ptr<Session> session_;
  std::ostringstream input_log_;
  training::InputHook input_;
  bool running_ = false;
};

}  // namespace training_graph_test
}  // namespace sluice

#endif  // SLUICE_TESTS_TRAINING_GRAPH_TESTLIB_H_
