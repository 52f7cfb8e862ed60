// A `text` input end to end: an experiment's input section (configs/
// experiment.proto, Input.Text) is loaded, defaulted and validated, then
// models/input_pipeline.cc builds its train and eval pipelines into one graph,
// which a Session runs under QueueRunners: the batches hold "tokens" and
// "targets", int64 [batch, seq_len], targets the tokens shifted by one; the
// eval pipeline reads every test window once per epoch; bad configs are
// errors at file:line:col.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "configs/load.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"
#include "inputs/queue_runner.h"
#include "inputs/text.h"
#include "models/input_pipeline.h"

namespace sluice {
namespace {

const char kCorpus[] = "inputs/testdata/corpus.fortunes";

// Line numbers in the tests below refer to this text.
std::string Config(const std::string& corpus) {
  return absl::StrCat(
      "name: \"lm\"\n"                                                                              // 1
      "model { layer { name: \"e\" input: \"tokens\" embedding { vocabulary_size: 200 dimension: 4 } } }\n"  // 2
      "input {\n"                                                                                   // 3
      "  train { text { files: \"", corpus, "\" format: FORTUNES seq_len: 6\n"                      // 4
      "                 vocabulary { max_size: 50 } }\n"                                            // 5
      "          batch_size: 8 shuffle { capacity: 100 min_after_dequeue: 20 } }\n"                 // 6
      "  eval { text { files: \"", corpus, "\" format: FORTUNES seq_len: 4\n"                       // 7
      "                vocabulary { max_size: 50 } }\n"                                             // 8
      "         batch_size: 2 }\n"                                                                  // 9
      "}\n"                                                                                         // 10
      "optimizer { sgd { learning_rate: 0.1 } }\n"                                                  // 11
      "train { steps: 10 }\n");                                                                     // 12
}

// Parses, defaults and validates; the input section's errors only (the model
// above has no loss, which is not this test's business).
std::vector<std::string> InputErrors(const std::string& text, config::Experiment* out = nullptr) {
  auto loaded = config::ParseExperiment("lm.pbtxt", text);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return {"parse failed"};
  config::ApplyDefaults(&(*loaded)->experiment);
  config::ConfigErrors errors("lm.pbtxt");
  config::Validate(**loaded, &errors);
  std::vector<std::string> lines;
  for (const std::string& l : errors.lines()) {
    if (!absl::StrContains(l, "loss")) lines.push_back(l);
  }
  if (out != nullptr) *out = (*loaded)->experiment;
  return lines;
}

TEST(TextInputConfig, DefaultsAndValidation) {
  config::Experiment e;
  std::vector<std::string> errors = InputErrors(Config(kCorpus), &e);
  EXPECT_TRUE(errors.empty()) << errors[0];
  EXPECT_EQ(e.input().train().text().split(), config::Input::Text::TRAIN);
  EXPECT_EQ(e.input().eval().text().split(), config::Input::Text::TEST);
  EXPECT_EQ(e.input().train().text().vocabulary().min_count(), 1);
  std::string no_len = absl::StrReplaceAll(Config(kCorpus), {{" seq_len: 6", ""}});
  ASSERT_TRUE(InputErrors(no_len, &e).empty());
  EXPECT_EQ(e.input().train().text().seq_len(), 35);
}

TEST(TextInputConfig, ErrorsNameFileLineAndColumn) {
  struct Case {
    std::string from, to, where, what;
  };
  for (const Case& c : std::vector<Case>{
           {"seq_len: 6", "seq_len: -1", "lm.pbtxt:4:", "seq_len must be in [1, 16777216], got -1"},
           {"max_size: 50 } }\n          batch", "max_size: 2 } }\n          batch", "lm.pbtxt:5:", "max_size must be >= 3"},
           {"train { text { files: \"inputs", "train { text { files: \"/nonexistent/inputs", "lm.pbtxt:4:", "no file matches"},
           {"vocabulary { max_size: 50 } }\n          batch", "vocabulary { file: \"/nonexistent/vocab.txt\" } }\n          batch",
            "lm.pbtxt:5:", "does not exist"},
           {"vocabulary { max_size: 50 } }\n          batch", "vocabulary { max_size: 40 } }\n          batch",
            "lm.pbtxt:8:", "eval's vocabulary differs from train's"},
           {"format: FORTUNES seq_len: 4", "format: FORTUNES seq_len: 4 keep_case: true", "lm.pbtxt:7:",
            "eval's keep_case differs from train's"},
       }) {
    std::string text = Config(kCorpus);
    ASSERT_NE(text.find(c.from), std::string::npos) << c.from;
    text = absl::StrReplaceAll(text, {{c.from, c.to}});
    std::vector<std::string> errors = InputErrors(text);
    ASSERT_FALSE(errors.empty()) << c.to;
    EXPECT_TRUE(absl::StrContains(errors[0], c.where)) << errors[0] << " (expected at " << c.where << ")";
    EXPECT_TRUE(absl::StrContains(errors[0], c.what)) << errors[0] << " (expected " << c.what << ")";
  }
}

struct Running {
  GraphDef graph;
  models::InputPipeline train, eval;
  std::unique_ptr<Session> session;
  std::vector<std::unique_ptr<QueueRunner>> runners;
  Coordinator coord;

  // The pipelines' queues and readers live in the process's default
  // container under their node names; the next test starts without them.
  ~Running() {
    coord.RequestStop();
    for (auto& r : runners) r->Join().IgnoreError();
    runners.clear();
    session.reset();
    Session::Reset({""});
  }
  void Start() {
    auto s = NewSession();
    ASSERT_TRUE(s.ok()) << s.status();
    session = std::move(s).value();
    ASSERT_TRUE(session->Create(graph).ok()) << session->Create(graph);
    std::vector<std::string> init = train.init_ops;
    init.insert(init.end(), eval.init_ops.begin(), eval.init_ops.end());
    std::vector<Tensor> out;
    if (!init.empty()) {
      ASSERT_TRUE(session->Run({}, {}, init, &out).ok());
    }
    std::vector<QueueRunnerDef> defs = train.runners;
    defs.insert(defs.end(), eval.runners.begin(), eval.runners.end());
    for (const QueueRunnerDef& def : defs) {
      auto r = QueueRunner::New(def);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE((*r)->Start(session.get(), &coord).ok());
      runners.push_back(std::move(r).value());
    }
  }
  std::vector<Tensor> Batch(const models::InputPipeline& p) {
    std::vector<Tensor> out;
    absl::Status s = session->Run({}, {p.features.at("tokens").tensor, p.features.at("targets").tensor}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }
};

TEST(TextInputPipeline, BuildsBatchesOfTokensAndShiftedTargets) {
  config::Experiment e;
  ASSERT_TRUE(InputErrors(Config(kCorpus), &e).empty());
  Running run;
  models::PipelineOptions train_options;
  train_options.scope = "input/train";
  train_options.seed = 3;
  ASSERT_TRUE(models::BuildInputPipeline(e.input().train(), train_options, &run.graph, &run.train).ok());
  models::PipelineOptions eval_options;
  eval_options.scope = "input/eval";
  eval_options.training = false;
  eval_options.vocabulary = run.train.vocabulary;  // as models/training_graph.cc does
  absl::Status built = models::BuildInputPipeline(e.input().eval(), eval_options, &run.graph, &run.eval);
  ASSERT_TRUE(built.ok()) << built;

  // What the pipeline declares.
  for (const auto* p : {&run.train, &run.eval}) {
    ASSERT_EQ(p->features.size(), 2u);
    EXPECT_EQ(p->features.at("tokens").dtype, DT_INT64);
    EXPECT_EQ(p->features.at("targets").dtype, DT_INT64);
    ASSERT_EQ(p->vocabulary.size(), 50u);  // max_size
    EXPECT_EQ(p->vocabulary[0], "<unk>");
    EXPECT_EQ(p->vocabulary[1], "<eos>");
    EXPECT_EQ(p->readers.size(), 1u);
    EXPECT_TRUE(absl::StrContains(p->description, "vocabulary 50")) << p->description;
  }
  EXPECT_EQ(run.train.features.at("tokens").shape.DebugString(), PartialShape::FromDims({-1, 6}).DebugString());
  EXPECT_EQ(run.eval.features.at("targets").shape.DebugString(), PartialShape::FromDims({-1, 4}).DebugString());
  EXPECT_EQ(run.train.vocabulary, run.eval.vocabulary);
  EXPECT_TRUE(run.train.exact_order);  // a seeded permutation per epoch, batched in order
  EXPECT_TRUE(run.eval.exact_order);
  EXPECT_TRUE(absl::StrContains(run.train.description, "seeded permutation per epoch")) << run.train.description;

  // The counts the text library gives for the same corpus.
  text::Corpus corpus;
  corpus.files = {kCorpus};
  corpus.format = text::Format::kFortunes;
  auto vocabulary = text::Vocabulary::FromWords(run.train.vocabulary, "pipeline");
  ASSERT_TRUE(vocabulary.ok());
  auto test_stream = text::ReadTokenStream(Env::Default(), corpus, text::Split::kTest, *vocabulary);
  ASSERT_TRUE(test_stream.ok());
  const int64_t test_windows = text::NumWindows(static_cast<int64_t>(test_stream->ids.size()), 4);
  ASSERT_GE(test_windows, 3);  // more than a batch of 2, so an epoch ends mid-batch
  EXPECT_EQ(run.eval.examples_per_epoch, test_windows);
  auto train_stream = text::ReadTokenStream(Env::Default(), corpus, text::Split::kTrain, *vocabulary);
  ASSERT_TRUE(train_stream.ok());
  EXPECT_EQ(run.train.examples_per_epoch, text::NumWindows(static_cast<int64_t>(train_stream->ids.size()), 6));

  run.Start();
  // Train batches: shapes, id range, and targets = tokens shifted by one
  // within each window (window w's ids are the stream's [6w, 6w + 6]).
  std::set<int64_t> starts;
  std::vector<std::vector<int64_t>> train_rows;  // each row's tokens and last target
  const int64_t epoch = run.train.examples_per_epoch;
  for (int64_t step = 0; step * 8 < epoch; ++step) {
    std::vector<Tensor> b = run.Batch(run.train);
    ASSERT_EQ(b.size(), 2u);
    ASSERT_EQ(b[0].dtype(), DT_INT64);
    ASSERT_EQ(b[1].dtype(), DT_INT64);
    ASSERT_EQ(b[0].shape(), TensorShape({8, 6}));
    ASSERT_EQ(b[1].shape(), TensorShape({8, 6}));
    for (int64_t row = 0; row < 8; ++row) {
      const int64_t* x = b[0].data<int64_t>() + row * 6;
      const int64_t* y = b[1].data<int64_t>() + row * 6;
      train_rows.emplace_back(x, x + 6);
      train_rows.back().push_back(y[5]);
      for (int i = 0; i + 1 < 6; ++i) EXPECT_EQ(y[i], x[i + 1]) << "row " << row;
      for (int i = 0; i < 6; ++i) {
        EXPECT_GE(x[i], 0);
        EXPECT_LT(x[i], 50);
      }
      // Find the window in the stream: its tokens and its last target.
      bool found = false;
      for (int64_t w = 0; w < run.train.examples_per_epoch && !found; ++w) {
        bool match = true;
        for (int i = 0; i < 6 && match; ++i) {
          match = x[i] == train_stream->ids[w * 6 + i] && y[i] == train_stream->ids[w * 6 + i + 1];
        }
        if (match) {
          found = true;
          starts.insert(w);
        }
      }
      EXPECT_TRUE(found) << "row " << row << " of step " << step << " is no window of the train stream";
    }
  }
  EXPECT_GT(starts.size(), 10u);  // windows from across the corpus, not one repeated
  // The first epoch is every window once, in another order than the file's.
  ASSERT_GE(static_cast<int64_t>(train_rows.size()), epoch);
  std::vector<std::vector<int64_t>> first_epoch(train_rows.begin(), train_rows.begin() + epoch), in_file_order;
  for (int64_t w = 0; w < epoch; ++w) {
    in_file_order.emplace_back(train_stream->ids.begin() + w * 6, train_stream->ids.begin() + w * 6 + 7);
  }
  EXPECT_NE(first_epoch, in_file_order);
  std::sort(first_epoch.begin(), first_epoch.end());
  std::sort(in_file_order.begin(), in_file_order.end());
  EXPECT_EQ(first_epoch, in_file_order);

  // Eval: the test windows in order, once per epoch, then again.
  std::vector<std::vector<int64_t>> eval_rows;
  while (static_cast<int64_t>(eval_rows.size()) < test_windows + 3) {
    std::vector<Tensor> b = run.Batch(run.eval);
    ASSERT_EQ(b[0].shape(), TensorShape({2, 4}));
    for (int64_t row = 0; row < 2; ++row) {
      eval_rows.emplace_back(b[0].data<int64_t>() + row * 4, b[0].data<int64_t>() + row * 4 + 4);
      eval_rows.back().push_back(b[1].data<int64_t>()[row * 4 + 3]);
    }
  }
  for (size_t r = 0; r < eval_rows.size(); ++r) {
    const int64_t w = static_cast<int64_t>(r) % test_windows;
    std::vector<int64_t> expect(test_stream->ids.begin() + w * 4, test_stream->ids.begin() + w * 4 + 5);
    EXPECT_EQ(eval_rows[r], expect) << "eval row " << r;
  }
}

TEST(TextInputPipeline, ASplitTooShortForOneWindowIsAnError) {
  const std::string dir = FreshTestDir("short_corpus");
  ASSERT_TRUE(WriteStringToFile(Env::Default(), dir + "/c.txt", "one two three\n").ok());
  config::Experiment e;
  std::string text = absl::StrReplaceAll(Config(dir + "/c.txt"), {{"format: FORTUNES ", ""}, {"seq_len: 6", "seq_len: 3"}});
  ASSERT_TRUE(InputErrors(text, &e).empty());
  GraphDef graph;
  models::InputPipeline p;
  models::PipelineOptions o;
  o.scope = "input/train";
  // "one two three" + <eos> is 4 tokens, in the train split: one window
  // of 3 + 1, and none of 4 + 1.
  std::vector<std::string> t;
  text::Tokenize("one two three", &t);
  ASSERT_EQ(text::SentenceSplit(t), text::Split::kTrain);
  absl::Status s = models::BuildInputPipeline(e.input().train(), o, &graph, &p);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(p.examples_per_epoch, 1);
  e.mutable_input()->mutable_train()->mutable_text()->set_seq_len(4);
  GraphDef graph2;
  s = models::BuildInputPipeline(e.input().train(), o, &graph2, &p);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "holds 4 tokens: too few for one window of seq_len + 1 = 5")) << s;
}

// Files that already are one split (split: ALL): the train input's
// vocabulary comes from all its sentences, the eval input maps its own files'
// words with it (words only there are <unk>) and reads all of their sentences.
TEST(TextInputPipeline, PreSplitFilesUseTheTrainFilesVocabulary) {
  const std::string dir = FreshTestDir("presplit");
  ASSERT_TRUE(WriteStringToFile(Env::Default(), dir + "/train.txt",
                                "the cat sat on the mat .\nthe dog sat on the log .\nthe cat saw the dog .\n")
                  .ok());
  ASSERT_TRUE(WriteStringToFile(Env::Default(), dir + "/test.txt", "the bird sat on the cat .\n").ok());
  const std::string text = absl::StrCat(
      "name: \"lm\"\n"
      "model { layer { name: \"e\" input: \"tokens\" embedding { vocabulary_size: 20 dimension: 4 } } }\n"
      "input {\n"
      "  train { text { files: \"", dir, "/train.txt\" split: ALL seq_len: 3 } batch_size: 2 }\n"
      "  eval { text { files: \"", dir, "/test.txt\" split: ALL seq_len: 3 } batch_size: 2 }\n"
      "}\n"
      "optimizer { sgd { learning_rate: 0.1 } }\n"
      "train { steps: 10 }\n");
  config::Experiment e;
  std::vector<std::string> errors = InputErrors(text, &e);
  ASSERT_TRUE(errors.empty()) << errors[0];
  Running run;
  models::PipelineOptions o;
  o.scope = "input/train";
  absl::Status s = models::BuildInputPipeline(e.input().train(), o, &run.graph, &run.train);
  ASSERT_TRUE(s.ok()) << s;
  // Every sentence of train.txt counts: 9 distinct words, with <unk> and <eos>.
  ASSERT_EQ(run.train.vocabulary.size(), 11u);
  EXPECT_EQ(run.train.vocabulary[2], "the");
  EXPECT_EQ(run.train.vocabulary[3], ".");
  EXPECT_EQ(run.train.examples_per_epoch, text::NumWindows(8 + 8 + 7, 3));  // each sentence + <eos>
  EXPECT_TRUE(absl::StrContains(run.train.description, "text (all sentences) of 1 file (")) << run.train.description;
  o.scope = "input/eval";
  o.training = false;
  o.vocabulary = run.train.vocabulary;
  s = models::BuildInputPipeline(e.input().eval(), o, &run.graph, &run.eval);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(run.eval.vocabulary, run.train.vocabulary);
  ASSERT_EQ(run.eval.examples_per_epoch, 2);  // 7 + 1 ids: windows [0..3], [3..6]
  EXPECT_TRUE(absl::StrContains(run.eval.description, "(1 <unk>)")) << run.eval.description;  // "bird"
  run.Start();
  std::vector<Tensor> b = run.Batch(run.eval);
  ASSERT_EQ(b[0].shape(), TensorShape({2, 3})) << b[0].shape().DebugString() << " " << run.eval.description;
  auto id = [&](const std::string& w) {
    return static_cast<int64_t>(std::find(run.train.vocabulary.begin(), run.train.vocabulary.end(), w) -
                                run.train.vocabulary.begin());
  };
  const std::vector<int64_t> expect_tokens = {id("the"), 0, id("sat"), id("on"), id("the"), id("cat")};
  const std::vector<int64_t> expect_targets = {0, id("sat"), id("on"), id("the"), id("cat"), id(".")};
  EXPECT_EQ(std::vector<int64_t>(b[0].data<int64_t>(), b[0].data<int64_t>() + 6), expect_tokens);
  EXPECT_EQ(std::vector<int64_t>(b[1].data<int64_t>(), b[1].data<int64_t>() + 6), expect_targets);
}

// The shipped example validates and its pipelines build on the fortunes
// package (tools/setup.sh installs it).
TEST(TextInputPipeline, ShippedFortunesConfigBuilds) {
  if (!Env::Default()->FileExists("/usr/share/games/fortunes/fortunes").ok()) {
    GTEST_SKIP() << "/usr/share/games/fortunes is missing: install the Debian package 'fortunes' (tools/setup.sh)";
  }
  auto loaded = config::LoadExperimentFile("configs/fortunes_bigram.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  config::ApplyDefaults(&(*loaded)->experiment);
  config::ConfigErrors errors("configs/fortunes_bigram.pbtxt");
  config::Validate(**loaded, &errors);
  ASSERT_TRUE(errors.empty()) << errors.ToStatus();
  const config::Experiment& e = (*loaded)->experiment;
  GraphDef graph;
  models::InputPipeline train, eval;
  models::PipelineOptions o;
  o.scope = "input/train";
  absl::Status s = models::BuildInputPipeline(e.input().train(), o, &graph, &train);
  ASSERT_TRUE(s.ok()) << s;
  o.scope = "input/eval";
  o.training = false;
  s = models::BuildInputPipeline(e.input().eval(), o, &graph, &eval);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(train.vocabulary.size(), 10000u);
  EXPECT_GT(train.examples_per_epoch, 400000);
  EXPECT_GT(eval.examples_per_epoch, 40000);
  std::printf("%s\n%s\n", train.description.c_str(), eval.description.c_str());
}

}  // namespace
}  // namespace sluice
