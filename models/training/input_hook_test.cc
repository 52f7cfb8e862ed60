// InputHook on a FakeSession: the init ops, the readers' restored position after a resume,
// the queue runners' threads (running until Close), and the pipeline's first error.
#include "models/training/input_hook.h"

#include <sstream>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "inputs/reader_state.pb.h"
#include "models/training/fake_session.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"

namespace sluice {
namespace training {
namespace {

InputHookOptions Options() {
  InputHookOptions o;
  o.train.init_ops = {"input/train/init"};
  o.train.readers.push_back({"IdxRecordReader", "/data/train.idx", "input/train/reader_state", "input/train/restore"});
  o.train.examples_per_epoch = 100;
  o.train.exact_order = true;
  o.train.runners.push_back({"input/train/batch_queue", {"input/train/enqueue"}, "input/train/close", "input/train/cancel"});
  o.eval.init_ops = {"input/eval/init"};
  o.eval.runners.push_back({"input/eval/batch_queue", {"input/eval/enqueue"}, "input/eval/close", "input/eval/cancel"});
  o.examples_per_step = 40;
  return o;
}

// Waits up to 10 s for `done`.
template <typename F>
bool WaitFor(F done) {
  for (int i = 0; i < 1000 && !done(); ++i) absl::SleepFor(absl::Milliseconds(10));
  return done();
}

class InputHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Enqueue ops take a moment, as a real one blocks on a full queue.
    session_.SetHandler([this](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
      for (size_t i = 0; i < call.fetches.size(); ++i) out->push_back(Tensor::Scalar<float>(0));
      for (const std::string& t : call.targets) {
        if (t.find("enqueue") == std::string::npos) continue;
        absl::SleepFor(absl::Milliseconds(1));
        if (!enqueue_error_.ok()) return enqueue_error_;
      }
      return absl::OkStatus();
    });
  }
  size_t Enqueues(const std::string& op) const { return session_.CallsWithTarget(op).size(); }

  FakeSession session_;
  absl::Status enqueue_error_;
  std::ostringstream out_;
};

TEST_F(InputHookTest, AFreshRunInitializesAndRunsTheQueueRunnersUntilClose) {
  InputHook hook(Options(), &out_);
  LoopStart start;
  ASSERT_TRUE(hook.Begin(&session_, start).ok());
  std::vector<FakeSession::Call> calls = session_.calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls[0].targets, (std::vector<std::string>{"input/train/init", "input/eval/init"}));
  EXPECT_TRUE(session_.CallsWithTarget("input/train/restore").empty());
  EXPECT_TRUE(WaitFor([&] { return Enqueues("input/train/enqueue") > 2 && Enqueues("input/eval/enqueue") > 2; }));
  hook.Close(LoopEnd());
  EXPECT_GE(session_.CallsWithTarget("input/train/cancel").size(), 1u);
  const size_t after_close = Enqueues("input/train/enqueue");
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(Enqueues("input/train/enqueue"), after_close) << "a runner kept running after Close";
  EXPECT_TRUE(hook.status().ok());
  EXPECT_EQ(out_.str(), "");
}

TEST_F(InputHookTest, AResumedRunPutsTheReadersWhereTheUninterruptedRunWouldBe) {
  InputHook hook(Options(), &out_);
  LoopStart start;
  start.step = 3;  // 120 examples of 100 per epoch: epoch 1, item 20
  start.resumed = true;
  ASSERT_TRUE(hook.Begin(&session_, start).ok());
  hook.Close(LoopEnd());
  std::vector<FakeSession::Call> restores = session_.CallsWithTarget("input/train/restore");
  ASSERT_EQ(restores.size(), 1u);
  ASSERT_EQ(restores[0].feeds.size(), 1u);
  EXPECT_EQ(restores[0].feeds[0].first, "input/train/reader_state");
  ReaderState state;
  const tstring& bytes = restores[0].feeds[0].second.scalar<tstring>();
  ASSERT_TRUE(state.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  EXPECT_EQ(state.reader_type(), "IdxRecordReader");
  EXPECT_EQ(state.current_work(), "/data/train.idx");
  EXPECT_EQ(state.work_started(), 2);
  EXPECT_EQ(state.work_finished(), 1);
  EXPECT_EQ(state.position(), 20);
  EXPECT_EQ(state.num_records_produced(), 120);
  EXPECT_EQ(out_.str(), "input restored to example 120 (exact order)\n");
}

// A replica that joins a fresh run at global step 3 starts its input there
// too, and says so without claiming a restore.
TEST_F(InputHookTest, AReplicaJoiningAFreshRunLateSaysWhereItsInputStarts) {
  InputHook hook(Options(), &out_);
  LoopStart start;
  start.step = 3;
  ASSERT_TRUE(hook.Begin(&session_, start).ok());
  hook.Close(LoopEnd());
  EXPECT_EQ(session_.CallsWithTarget("input/train/restore").size(), 1u);
  EXPECT_EQ(out_.str(), "input starts at example 120 (exact order): the run is at step 3\n");
}

// A replica reads every 3rd record (its shard of 100, out of a file of 300):
// example 20 of its shard's epoch is at about record 60 of the file.
TEST_F(InputHookTest, AShardedReaderIsPutAtItsShardsPositionInTheFile) {
  InputHookOptions o = Options();
  o.train.num_shards = 3;
  InputHook hook(o, &out_);
  LoopStart start;
  start.step = 3;  // 120 of the shard's examples: its epoch 1, item 20
  ASSERT_TRUE(hook.Begin(&session_, start).ok());
  hook.Close(LoopEnd());
  std::vector<FakeSession::Call> restores = session_.CallsWithTarget("input/train/restore");
  ASSERT_EQ(restores.size(), 1u);
  ReaderState state;
  const tstring& bytes = restores[0].feeds[0].second.scalar<tstring>();
  ASSERT_TRUE(state.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  EXPECT_EQ(state.work_started(), 2);
  EXPECT_EQ(state.position(), 60);
}

// The files record: a fresh run writes it; a resume over a grown file warns
// and writes it anew; a resume over the same files says nothing of them.
TEST_F(InputHookTest, AResumeWarnsAboutTrainingFilesChangedSinceTheLastRun) {
  const std::string dir = FreshTestDir("input_files");
  Env* env = Env::Default();
  const std::string data = dir + "/train.idx";
  ASSERT_TRUE(WriteStringToFile(env, data, "1234").ok());
  InputHookOptions o = Options();
  o.train.readers[0].file = data;
  o.files_record = dir + "/input_files.txt";
  auto begin = [&](int64_t step) {
    out_.str("");
    InputHook hook(o, &out_);
    LoopStart start;
    start.step = step;
    start.resumed = step > 0;
    EXPECT_TRUE(hook.Begin(&session_, start).ok());
    hook.Close(LoopEnd());
    return out_.str();
  };
  EXPECT_EQ(begin(0), "");
  EXPECT_EQ(ReadFileToString(env, o.files_record).value(), "4 " + data + "\n");
  EXPECT_EQ(begin(2), "input restored to example 80 (exact order)\n");
  ASSERT_TRUE(WriteStringToFile(env, data, "123456").ok());
  EXPECT_EQ(begin(2), "warning: the training files changed since the last run in this directory (" + o.files_record +
                          "):\n  " + data + ": 6 bytes, was 4\n  the input resumes at example 80 of the files as they "
                          "are now, which is not where that run stopped reading\n"
                          "input restored to example 80 (exact order)\n");
  EXPECT_EQ(begin(3), "input restored to example 120 (exact order)\n");
}

// A replicated run reads its shard of a TFRecord or CSV source's files; the
// chief's record lists every shard's.
TEST_F(InputHookTest, TheFilesRecordListsTheFilesOfEveryShard) {
  const std::string dir = FreshTestDir("input_files_shards");
  Env* env = Env::Default();
  const std::string a = dir + "/part-0", b = dir + "/part-1";
  ASSERT_TRUE(WriteStringToFile(env, a, "12").ok());
  ASSERT_TRUE(WriteStringToFile(env, b, "345").ok());
  InputHookOptions o = Options();
  o.train.readers.clear();
  o.train.file_source.emplace();
  o.train.file_source->files = {a};  // shard 0 of 2
  o.train.all_files = {a, b};
  o.files_record = dir + "/input_files.txt";
  InputHook hook(o, &out_);
  ASSERT_TRUE(hook.Begin(&session_, LoopStart()).ok());
  hook.Close(LoopEnd());
  EXPECT_EQ(ReadFileToString(env, o.files_record).value(), "2 " + a + "\n3 " + b + "\n");
}

TEST_F(InputHookTest, ARunnerErrorBecomesThePipelinesStatus) {
  enqueue_error_ = absl::DataLossError("corrupt record at offset 16");
  InputHook hook(Options(), &out_);
  ASSERT_TRUE(hook.Begin(&session_, LoopStart()).ok());
  EXPECT_TRUE(WaitFor([&] { return !hook.status().ok(); }));
  EXPECT_TRUE(absl::IsDataLoss(hook.status())) << hook.status();
  hook.Close(LoopEnd());
}

TEST_F(InputHookTest, AFailedInitFailsBeginWithContext) {
  session_.SetHandler([](const FakeSession::Call& call, std::vector<Tensor>*, RunMetadata*) {
    return absl::NotFoundError("no such file /data/train.idx");
  });
  InputHook hook(Options(), &out_);
  absl::Status s = hook.Begin(&session_, LoopStart());
  EXPECT_TRUE(absl::IsNotFound(s));
  EXPECT_EQ(s.message(), "initializing the input pipeline: no such file /data/train.idx");
}

TEST_F(InputHookTest, AnInvalidRunnerIsRejected) {
  InputHookOptions o = Options();
  o.eval.runners[0].close_op_name = "";
  InputHook hook(o, &out_);
  absl::Status s = hook.Begin(&session_, LoopStart());
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  hook.Close(LoopEnd());
}

}  // namespace
}  // namespace training
}  // namespace sluice
