// Experiment loading and validation: the shipped configs load cleanly, and
// broken configs each produce located errors (file:line:col) naming the
// problem, all at once, with did-you-mean suggestions.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "configs/load.h"
#include "gtest/gtest.h"

namespace sluice {
namespace config {
namespace {

constexpr char kImages[] = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
constexpr char kLabels[] = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz";

// Line numbers below refer to this text (line 1 is `name: ...`).
std::string Base() {
  return absl::StrCat(
      "name: \"t\"\n"                                                                      // 1
      "model {\n"                                                                          // 2
      "  layer { name: \"flat\" input: \"image\" flatten {} }\n"                           // 3
      "  layer { name: \"fc1\" input: \"flat\" dense { units: 16 activation: RELU } }\n"   // 4
      "  layer { name: \"logits\" input: \"fc1\" dense { units: 10 } }\n"                  // 5
      "  loss { softmax_cross_entropy { logits: \"logits\" labels: \"label\" } }\n"        // 6
      "}\n"                                                                                // 7
      "input { train { idx { images: \"", kImages, "\" labels: \"", kLabels, "\" }\n"      // 8
      "                batch_size: 32 } }\n"                                               // 9
      "optimizer { sgd { learning_rate: 0.1 } }\n"                                         // 10
      "train { steps: 10 }\n");                                                            // 11
}

// Loads, applies defaults and validates, as `train --validate` does.
absl::Status Check(const std::string& text, std::vector<std::string> overrides = {}) {
  auto loaded = ParseExperiment("t.pbtxt", text);
  if (!loaded.ok()) return loaded.status();
  absl::Status s = ApplyOverrides(overrides, &(*loaded)->experiment);
  if (!s.ok()) return s;
  ApplyDefaults(&(*loaded)->experiment);
  ConfigErrors errors("t.pbtxt");
  Validate(**loaded, &errors);
  return errors.ToStatus();
}

TEST(Load, BaseConfigIsValid) {
  absl::Status s = Check(Base());
  EXPECT_TRUE(s.ok()) << s;
}

TEST(Load, ShippedConfigsAreValid) {
  for (const char* path : {"configs/fashion_mlp.pbtxt", "configs/fashion_cnn.pbtxt", "configs/fashion_logreg.pbtxt",
                           "configs/figure1_relu.pbtxt", "configs/fashion_sampled_softmax.pbtxt",
                           "configs/fashion_resnet.pbtxt", "configs/fashion_resnet_augmented.pbtxt"}) {
    auto loaded = LoadExperimentFile(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ApplyDefaults(&(*loaded)->experiment);
    ConfigErrors errors(path);
    Validate(**loaded, &errors);
    EXPECT_TRUE(errors.empty()) << errors.ToStatus();
  }
}

struct Broken {
  std::string name;
  std::string from, to;    // replace `from` by `to` in Base() ("" appends `to`)
  std::string location;    // "line:col" expected in the first error, or "" if none
  std::string substring;   // expected in the message
};

void PrintTo(const Broken& b, std::ostream* os) { *os << b.name; }

class BrokenConfigTest : public ::testing::TestWithParam<Broken> {};

TEST_P(BrokenConfigTest, GivesALocatedError) {
  const Broken& b = GetParam();
  std::string text = Base();
  if (b.from.empty()) {
    text += b.to;
  } else {
    ASSERT_NE(text.find(b.from), std::string::npos) << b.from;
    text = absl::StrReplaceAll(text, {{b.from, b.to}});
  }
  absl::Status s = Check(text);
  ASSERT_FALSE(s.ok()) << b.name;
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  std::string msg(s.message());
  EXPECT_EQ(msg.rfind("t.pbtxt:", 0), 0u) << msg;
  if (!b.location.empty()) {
    // "line" or "line:anchor": the column is where `anchor` starts on that line.
    std::string where = b.location;
    size_t colon = where.find(':');
    if (colon != std::string::npos) {
      int line = std::stoi(where.substr(0, colon));
      std::string anchor = where.substr(colon + 1);
      std::vector<std::string> rows = absl::StrSplit(text, '\n');
      ASSERT_LT(line - 1, static_cast<int>(rows.size()));
      size_t col = rows[line - 1].find(anchor);
      ASSERT_NE(col, std::string::npos) << "anchor '" << anchor << "' not on line " << line;
      where = absl::StrCat(line, ":", col + 1);
    }
    EXPECT_NE(msg.find("t.pbtxt:" + where + ":"), std::string::npos) << "expected at " << where << ": " << msg;
  }
  EXPECT_NE(msg.find(b.substring), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Configs, BrokenConfigTest,
    ::testing::Values(
        Broken{"syntax_missing_brace", "train { steps: 10 }", "train { steps: 10 ", "12", "Expected identifier"},
        Broken{"syntax_bad_value", "steps: 10", "steps: ten", "11:ten", "Expected integer"},
        Broken{"unknown_top_field", "", "trian { steps: 3 }\n", "12:trian", "did you mean 'train'"},
        Broken{"unknown_layer_field", "flatten {}", "flaten {}", "3:flaten", "did you mean 'flatten'"},
        Broken{"unknown_enum", "activation: RELU", "activation: RELUU", "4:RELUU", "did you mean 'RELU'"},
        Broken{"unknown_nested_enum", "activation: RELU", "activation: LINEAR_OR_WHAT", "",
               "unknown value 'LINEAR_OR_WHAT' for field 'activation'; valid values: "},
        Broken{"unknown_dense_field", "units: 16", "unit: 16", "4:unit", "did you mean 'units'"},
        Broken{"dangling_layer_input", "input: \"fc1\"", "input: \"fc_1\"", "5:input", "did you mean 'fc1'"},
        Broken{"layer_reads_later_layer", "input: \"flat\"", "input: \"logits\"", "4:input", "defined later"},
        Broken{"duplicate_layer_name", "name: \"fc1\"", "name: \"flat\"", "4:name", "used twice"},
        Broken{"layer_without_kind", "dense { units: 16 activation: RELU }", "", "", "needs a kind"},
        Broken{"layer_without_input", "input: \"flat\" ", "", "", "needs an 'input'"},
        Broken{"batch_norm_momentum_one", "dense { units: 16 activation: RELU }", "batch_norm { momentum: 1 }",
               "4:momentum", "momentum must be in [0, 1), got 1"},
        Broken{"batch_norm_zero_epsilon", "dense { units: 16 activation: RELU }", "batch_norm { epsilon: 0 }",
               "4:epsilon", "epsilon must be > 0, got 0"},
        Broken{"augment_that_changes_nothing", "flatten {}", "augment {}", "3:augment",
               "layer 'flat': augment changes nothing: set flip_left_right, max_shift or both"},
        Broken{"augment_negative_shift", "flatten {}", "augment { max_shift: -1 }", "3:max_shift",
               "augment max_shift must be >= 0, got -1"},
        Broken{"augment_of_a_layer", "dense { units: 16 activation: RELU }", "augment { flip_left_right: true }",
               "4:input", "layer 'fc1': augment takes an input feature (image, label), not the layer 'flat': no gradient "
                          "flows through it"},
        Broken{"warmup_as_long_as_the_run", "optimizer { sgd { learning_rate: 0.1 } }",
               "optimizer { sgd { learning_rate: 0.1 } schedule { warmup_cosine { warmup_steps: 10 } } }", "10:warmup_steps",
               "warmup_steps (10) must be below train.steps (10); for a shorter run also set "
               "optimizer.schedule.warmup_cosine.warmup_steps, e.g. --set optimizer.schedule.warmup_cosine.warmup_steps=1"},
        Broken{"add_of_one_input", "dense { units: 16 activation: RELU }", "add {}", "4:input",
               "(add) joins two or more inputs, but lists one"},
        Broken{"dense_of_two_inputs", "input: \"flat\" dense", "input: \"flat\" input: \"image\" dense", "4:input: \"image\"",
               "takes one input, but lists 2 (add and concat join several)"},
        Broken{"zero_units", "units: 16", "units: 0", "4:units", "units must be > 0"},
        Broken{"negative_units", "units: 10", "units: -10", "5:units", "units must be > 0"},
        Broken{"dangling_loss_logits", "logits: \"logits\"", "logits: \"logit\"", "6:logits:", "did you mean 'logits'"},
        Broken{"dangling_loss_labels", "labels: \"label\"", "labels: \"labels\"", "6:labels", "did you mean 'label'"},
        Broken{"no_loss", "  loss { softmax_cross_entropy { logits: \"logits\" labels: \"label\" } }\n", "", "2:model",
               "at least one 'loss'"},
        Broken{"missing_images_file", kImages, "/nonexistent/images.gz", "8:images", "does not exist"},
        Broken{"missing_labels_file", kLabels, "/nonexistent/labels.gz", "", "does not exist"},
        Broken{"negative_reader_threads", "batch_size: 32", "batch_size: 32 reader_threads: -2", "9:reader_threads", "reader_threads must be > 0"},
        Broken{"negative_batch", "batch_size: 32", "batch_size: -4", "9:batch_size", "batch_size must be > 0"},
        Broken{"zero_learning_rate", "learning_rate: 0.1", "learning_rate: 0", "", "learning_rate must be a positive"},
        Broken{"negative_learning_rate", "learning_rate: 0.1", "learning_rate: -0.1", "10:learning_rate", "learning_rate must be a positive"},
        Broken{"nan_learning_rate", "learning_rate: 0.1", "learning_rate: nan", "10:learning_rate", "learning_rate must be a positive"},
        Broken{"no_optimizer", "optimizer { sgd { learning_rate: 0.1 } }\n", "", "", "needs an optimizer"},
        Broken{"zero_steps", "steps: 10", "steps: 0", "11:train", "train.steps must be > 0"},
        Broken{"negative_steps", "steps: 10", "steps: -5", "11:steps", "train.steps must be > 0"},
        Broken{"bad_momentum", "sgd { learning_rate: 0.1 }", "momentum { learning_rate: 0.1 momentum: 1.5 }", "10:momentum:",
               "momentum must be in [0, 1)"},
        Broken{"bad_dropout_rate", "flatten {}", "dropout { rate: 1.5 }", "3:rate", "dropout rate must be in [0, 1)"},
        Broken{"huge_lstm_parallel_iterations", "flatten {}", "lstm { units: 4 parallel_iterations: 2000000000 }",
               "3:parallel_iterations", "parallel_iterations must be in [0, 1024] (0: 1), got 2000000000"},
        Broken{"negative_gru_parallel_iterations", "flatten {}", "gru { units: 4 parallel_iterations: -3 }",
               "3:parallel_iterations", "got -3"},
        Broken{"zero_lstm_units", "flatten {}", "lstm { units: 0 }", "3:units", "units must be > 0"},
        Broken{"shuffle_capacity_too_small", "batch_size: 32", "batch_size: 32 shuffle { capacity: 10 min_after_dequeue: 20 }",
               "9:capacity", "must exceed min_after_dequeue"},
        Broken{"bad_metrics_port", "", "monitoring { metrics_port: 70000 }\n", "12:metrics_port", "metrics_port"},
        Broken{"bad_job_name", "", "cluster { job { name: \"workers\" task: \"127.0.0.1:1\" } }\n", "12:name", 
               "did you mean 'worker'"},
        Broken{"bad_task_address", "", "cluster { job { name: \"ps\" task: \"localhost\" } }\n", "12:task", "host:port"},
        Broken{"sync_without_workers", "",
               "cluster { job { name: \"ps\" task: \"127.0.0.1:1\" } }\nreplication { sync { replicas_to_aggregate: 2 } }\n",
               "13:replication", "needs a 'worker' job"},
        Broken{"replication_without_ps", "",
               "cluster { job { name: \"worker\" task: \"127.0.0.1:1\" } }\nreplication { async {} }\n",
               "13:replication", "needs a 'ps' job"},
        Broken{"bad_piecewise", "sgd { learning_rate: 0.1 }",
               "sgd { learning_rate: 0.1 } schedule { piecewise { boundaries: 10 values: 0.1 } }", "", "one more value"},
        Broken{"bad_decay_steps", "sgd { learning_rate: 0.1 }",
               "sgd { learning_rate: 0.1 } schedule { exponential_decay { decay_steps: 0 decay_rate: 0.5 } }", "",
               "decay_steps must be > 0"},
        Broken{"best_model_without_eval", "steps: 10", "steps: 10 best_model {}", "11:best_model",
               "best_model needs evaluations: add an input.eval section"},
        Broken{"best_model_unknown_metric", "steps: 10", "steps: 10 best_model { metric: \"acuracy\" }", "11:metric",
               "best_model.metric 'acuracy' is not a value this model's evaluation reports (loss)"},
        Broken{"best_model_patience_without_periodic_evals", "steps: 10", "steps: 10 best_model { patience: 3 }",
               "11:patience", "set train.eval_every_steps"},
        Broken{"best_model_negative_min_delta", "steps: 10", "steps: 10 best_model { min_delta: -0.1 }", "11:min_delta",
               "min_delta must be >= 0"},
        Broken{"bad_name", "name: \"t\"", "name: \"my run\"", "1:name", "may only hold"},
        Broken{"no_name", "name: \"t\"\n", "", "", "needs a 'name'"},
        Broken{"negative_l2", "flatten {}", "flatten {} l2_weight: -1", "3:l2_weight", "l2_weight must be >= 0"},
        Broken{"bad_reshape", "flatten {}", "reshape { shape: -1 shape: -1 }", "", "at most one reshape dim"},
        Broken{"no_input", "input { train { idx { images: \"", "inputx { train { idx { images: \"", "8:inputx",
               "did you mean 'input'"},
        Broken{"embedding_partitions_past_vocabulary", "flatten {}",
               "embedding { vocabulary_size: 5 dimension: 2 partitions: 6 }", "3:partitions",
               "partitions must be in [0, vocabulary_size = 5], got 6"},
        Broken{"negative_embedding_partitions", "flatten {}",
               "embedding { vocabulary_size: 5 dimension: 2 partitions: -1 }", "3:partitions", "got -1"},
        Broken{"sampled_softmax_too_many_samples", "softmax_cross_entropy { logits: \"logits\" labels: \"label\" }",
               "sampled_softmax { inputs: \"fc1\" labels: \"label\" num_classes: 10 num_sampled: 11 }", "6:num_sampled",
               "num_sampled must be in [1, num_classes = 10], got 11"},
        Broken{"sampled_softmax_without_classes", "softmax_cross_entropy { logits: \"logits\" labels: \"label\" }",
               "sampled_softmax { inputs: \"fc1\" labels: \"label\" num_sampled: 2 }", "6:sampled_softmax",
               "num_classes must be > 0"},
        Broken{"sampled_softmax_dangling_inputs", "softmax_cross_entropy { logits: \"logits\" labels: \"label\" }",
               "sampled_softmax { inputs: \"fc\" labels: \"label\" num_classes: 10 num_sampled: 2 }", "6:inputs",
               "did you mean 'fc1'"},
        Broken{"sampled_softmax_name_of_a_layer", "softmax_cross_entropy { logits: \"logits\" labels: \"label\" }",
               "sampled_softmax { inputs: \"fc1\" labels: \"label\" num_classes: 10 num_sampled: 2 name: \"fc1\" }",
               "6:name", "set a different 'name'"},
        Broken{"sampled_softmax_partitions_past_classes", "softmax_cross_entropy { logits: \"logits\" labels: \"label\" }",
               "sampled_softmax { inputs: \"fc1\" labels: \"label\" num_classes: 10 num_sampled: 2 partitions: 12 }",
               "6:partitions", "partitions must be in [0, num_classes = 10], got 12"}),
    [](const ::testing::TestParamInfo<Broken>& info) { return info.param.name; });

TEST(Load, ReportsAllSemanticErrorsAtOnce) {
  std::string text = absl::StrReplaceAll(Base(), {{"units: 16", "units: 0"}, {"learning_rate: 0.1", "learning_rate: -1"},
                                                  {"steps: 10", "steps: -1"}});
  absl::Status s = Check(text);
  ASSERT_FALSE(s.ok());
  std::string msg(s.message());
  EXPECT_NE(msg.find("t.pbtxt:4:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("t.pbtxt:10:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("t.pbtxt:11:"), std::string::npos) << msg;
  EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 2) << msg;
}

TEST(Load, OverridesSetFieldsAndExplainMistakes) {
  auto loaded = ParseExperiment("t.pbtxt", Base());
  ASSERT_TRUE(loaded.ok());
  Experiment& e = (*loaded)->experiment;
  ASSERT_TRUE(ApplyOverrides({"train.steps=99", "model.layer[1].dense.units=7", "model.layer[1].dense.activation=TANH",
                              "optimizer.adam={learning_rate: 0.01}"},
                             &e)
                  .ok());
  EXPECT_EQ(e.train().steps(), 99);
  EXPECT_EQ(e.model().layer(1).dense().units(), 7);
  EXPECT_EQ(e.model().layer(1).dense().activation(), TANH);
  EXPECT_TRUE(e.optimizer().has_adam());
  EXPECT_FLOAT_EQ(e.optimizer().adam().learning_rate(), 0.01f);
  absl::Status s = ApplyOverrides({"train.step=5"}, &e);
  EXPECT_NE(s.message().find("did you mean 'steps'"), std::string::npos) << s;
  s = ApplyOverrides({"train.steps=many"}, &e);
  EXPECT_NE(s.message().find("not a valid"), std::string::npos) << s;
  s = ApplyOverrides({"model.layer[9].name=x"}, &e);
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s;
  s = ApplyOverrides({"model.layer[1].dense.activation=RELUX"}, &e);
  EXPECT_NE(s.message().find("did you mean 'RELU'"), std::string::npos) << s;
  s = ApplyOverrides({"train.steps"}, &e);
  EXPECT_NE(s.message().find("field.path=value"), std::string::npos) << s;
  // No close name: the valid ones are listed.
  s = ApplyOverrides({"train.max_steps=100"}, &e);
  EXPECT_NE(s.message().find("no field 'max_steps' in Train; valid fields: steps, eval_every_steps"), std::string::npos) << s;
}

// A field's location also names the --set that gave it its value (the file's
// line holds another value), for a field written in the file, one it leaves
// out, and a field of a message set whole.
TEST(Load, WhereNamesTheOverrideThatSetAField) {
  auto loaded = ParseExperiment("t.pbtxt", Base());
  ASSERT_TRUE(loaded.ok());
  LoadedExperiment& l = **loaded;
  Experiment& e = l.experiment;
  const Location before = l.Where(e.train(), "steps");
  EXPECT_GT(before.line, 0);
  EXPECT_EQ(before.set_by, "");
  ASSERT_TRUE(ApplyOverrides({"train.steps=99", "devices.intra_op_threads=3", "optimizer.adam={learning_rate: 0.01}"},
                             &e, &l.overrides)
                  .ok());
  const Location steps = l.Where(e.train(), "steps");
  EXPECT_EQ(steps.line, before.line);
  EXPECT_EQ(steps.set_by, "train.steps=99");
  EXPECT_EQ(l.Where(e.devices(), "intra_op_threads").set_by, "devices.intra_op_threads=3");
  EXPECT_EQ(l.Where(e.devices(), "inter_op_threads").set_by, "");
  EXPECT_EQ(l.Where(e.optimizer().adam(), "learning_rate").set_by, "optimizer.adam={learning_rate: 0.01}");
  ConfigErrors errors("t.pbtxt");
  errors.Add(steps, "bad steps");
  EXPECT_EQ(errors.lines()[0], absl::StrCat("t.pbtxt:", steps.line, ":", steps.column,
                                            ": error: bad steps (set by --set train.steps=99)"));
}

// One element of a repeated scalar by its index, or one more at the end.
TEST(Load, OverridesSetOrAppendOneElementOfARepeatedScalar) {
  auto loaded = ParseExperiment("t.pbtxt", Base());
  ASSERT_TRUE(loaded.ok());
  Experiment& e = (*loaded)->experiment;
  ASSERT_TRUE(ApplyOverrides({"summaries.histograms[0]=fc1/*", "summaries.histograms[1]=logits/*"}, &e).ok());
  ASSERT_EQ(e.summaries().histograms_size(), 2);
  EXPECT_EQ(e.summaries().histograms(0), "fc1/*");
  EXPECT_EQ(e.summaries().histograms(1), "logits/*");
  ASSERT_TRUE(ApplyOverrides({"summaries.histograms[0]=fc2/*"}, &e).ok());
  EXPECT_EQ(e.summaries().histograms(0), "fc2/*");
  EXPECT_EQ(e.summaries().histograms_size(), 2);
  absl::Status s = ApplyOverrides({"summaries.histograms[5]=x"}, &e);
  EXPECT_NE(s.message().find("index 5 is out of range"), std::string::npos) << s;
  s = ApplyOverrides({"summaries.histograms=x"}, &e);
  EXPECT_NE(s.message().find("histograms[2] appends"), std::string::npos) << s;
}

// Loads `text` with `overrides` and applies the defaults (no validation).
Experiment Defaulted(const std::string& text, std::vector<std::string> overrides = {}) {
  auto loaded = ParseExperiment("t.pbtxt", text);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return Experiment();
  absl::Status s = ApplyOverrides(overrides, &(*loaded)->experiment);
  EXPECT_TRUE(s.ok()) << s;
  ApplyDefaults(&(*loaded)->experiment);
  return (*loaded)->experiment;
}

// A default fills a field that was left out, never a value the user wrote:
// `--set optimizer.adam.learning_rate=0` used to train at 0.001 silently.
TEST(Load, DefaultsFillOnlyFieldsLeftOut) {
  const std::string adam = absl::StrReplaceAll(Base(), {{"sgd { learning_rate: 0.1 }", "adam {}"}});
  Experiment e = Defaulted(adam);
  EXPECT_FLOAT_EQ(e.optimizer().adam().learning_rate(), 0.001f);
  EXPECT_FLOAT_EQ(e.optimizer().adam().beta1(), 0.9f);
  EXPECT_FLOAT_EQ(e.optimizer().adam().beta2(), 0.999f);
  EXPECT_FLOAT_EQ(e.optimizer().adam().epsilon(), 1e-8f);
  EXPECT_FLOAT_EQ(e.model().loss(0).weight(), 1.0f);

  e = Defaulted(adam, {"optimizer.adam.beta1=0", "model.loss[0].weight=0"});
  EXPECT_EQ(e.optimizer().adam().beta1(), 0.0f);
  EXPECT_FLOAT_EQ(e.optimizer().adam().beta2(), 0.999f);
  EXPECT_EQ(e.model().loss(0).weight(), 0.0f);
  EXPECT_TRUE(Check(adam, {"optimizer.adam.beta1=0"}).ok());

  e = Defaulted(absl::StrReplaceAll(Base(), {{"sgd { learning_rate: 0.1 }", "momentum { learning_rate: 0.1 momentum: 0 }"}}));
  EXPECT_EQ(e.optimizer().momentum().momentum(), 0.0f);
  e = Defaulted(absl::StrReplaceAll(Base(), {{"sgd { learning_rate: 0.1 }", "momentum { learning_rate: 0.1 }"}}));
  EXPECT_FLOAT_EQ(e.optimizer().momentum().momentum(), 0.9f);

  // A learning rate of 0, in the file or from --set, is refused where it was written.
  absl::Status s = Check(adam, {"optimizer.adam.learning_rate=0"});
  EXPECT_NE(s.message().find("learning_rate must be a positive number, got 0"), std::string::npos) << s;
  s = Check(absl::StrReplaceAll(adam, {{"adam {}", "adam { learning_rate: 0 }"}}));
  EXPECT_NE(s.message().find("t.pbtxt:10:"), std::string::npos) << s;
  EXPECT_NE(s.message().find("learning_rate must be a positive number"), std::string::npos) << s;
}

TEST(Load, OptimizerSettingsOutOfRangeAreRefused) {
  const std::string adam = absl::StrReplaceAll(Base(), {{"sgd { learning_rate: 0.1 }", "adam {}"}});
  absl::Status s = Check(adam, {"optimizer.adam.epsilon=0", "optimizer.adam.beta2=1"});
  EXPECT_NE(s.message().find("epsilon must be > 0"), std::string::npos) << s;
  EXPECT_NE(s.message().find("beta2 must be in [0, 1), got 1"), std::string::npos) << s;
  s = Check(absl::StrReplaceAll(Base(), {{"sgd { learning_rate: 0.1 }", "adagrad { learning_rate: 0.1 initial_accumulator: 0 }"}}));
  EXPECT_NE(s.message().find("t.pbtxt:10:"), std::string::npos) << s;
  EXPECT_NE(s.message().find("initial_accumulator must be > 0"), std::string::npos) << s;
  s = Check(absl::StrReplaceAll(Base(), {{"sgd { learning_rate: 0.1 }", "rmsprop { learning_rate: 0.1 decay: 1.5 epsilon: -1 }"}}));
  EXPECT_NE(s.message().find("decay must be in [0, 1), got 1.5"), std::string::npos) << s;
  EXPECT_NE(s.message().find("epsilon must be > 0"), std::string::npos) << s;
  EXPECT_TRUE(Check(absl::StrReplaceAll(Base(), {{"sgd { learning_rate: 0.1 }", "rmsprop { learning_rate: 0.1 }"}})).ok());
}

TEST(Load, ShuffleMinimumDefaultsTo5000OrHalfTheCapacity) {
  const std::string shuffled = absl::StrReplaceAll(Base(), {{"batch_size: 32", "batch_size: 32 shuffle {}"}});
  Experiment e = Defaulted(shuffled);
  EXPECT_EQ(e.input().train().shuffle().capacity(), 10000);
  EXPECT_EQ(e.input().train().shuffle().min_after_dequeue(), 5000);
  e = Defaulted(shuffled, {"input.train.shuffle.capacity=100"});
  EXPECT_EQ(e.input().train().shuffle().min_after_dequeue(), 50);
  EXPECT_TRUE(Check(shuffled, {"input.train.shuffle.capacity=100"}).ok());
  // A large capacity keeps the old default minimum, so such configs train (and resume) as before.
  e = Defaulted(shuffled, {"input.train.shuffle.capacity=20000"});
  EXPECT_EQ(e.input().train().shuffle().min_after_dequeue(), 5000);
  // A negative capacity is one error, about the capacity, not also about a minimum nobody wrote.
  absl::Status s = Check(shuffled, {"input.train.shuffle.capacity=-2"});
  EXPECT_NE(s.message().find("capacity (-2)"), std::string::npos) << s;
  EXPECT_EQ(s.message().find("min_after_dequeue must"), std::string::npos) << s;
  e = Defaulted(shuffled, {"input.train.shuffle.min_after_dequeue=0"});
  EXPECT_EQ(e.input().train().shuffle().min_after_dequeue(), 0);
}

// Issue 22, class 5: protobuf's text parser has no nesting limit of its own,
// so `attr { value { func { attr { ...` deep enough overflowed the stack, in
// the file and in a --set message alike. The limit is 64 levels; a config
// near it still parses.
std::string NestedFuncs(int levels) {
  std::string open, close;
  for (int i = 0; i < levels; ++i) {
    open += "attr { key: \"a\" value { func { name: \"f\" ";
    close += "} } } ";
  }
  return open + close;
}

TEST(Load, NestingIsBounded) {
  const std::string node_at = "  loss {";
  auto with_node = [&](int levels) {
    return absl::StrReplaceAll(
        Base(), {{node_at, absl::StrCat("  node { name: \"n\" op: \"NoOp\" ", NestedFuncs(levels), "}\n", node_at)}});
  };
  // Experiment > model > node is 2 levels; each function adds 3.
  auto ok = ParseExperiment("t.pbtxt", with_node(20));
  EXPECT_TRUE(ok.ok()) << ok.status();
  for (int levels : {21, 100000}) {
    auto deep = ParseExperiment("t.pbtxt", with_node(levels));
    ASSERT_FALSE(deep.ok()) << levels;
    EXPECT_TRUE(absl::IsInvalidArgument(deep.status())) << deep.status();
    EXPECT_EQ(deep.status().message().rfind("t.pbtxt:6:", 0), 0u) << deep.status();
    EXPECT_NE(deep.status().message().find("recursion limit of 64"), std::string::npos) << deep.status();
  }
  auto loaded = ParseExperiment("t.pbtxt", with_node(1));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto set_node = [&](int levels) {
    return ApplyOverrides({absl::StrCat("model.node[0]={name: \"n\" op: \"NoOp\" ", NestedFuncs(levels), "}")},
                          &(*loaded)->experiment);
  };
  absl::Status s = set_node(10);
  EXPECT_TRUE(s.ok()) << s;
  s = set_node(100000);
  EXPECT_NE(s.message().find("not a valid NodeDef"), std::string::npos) << s.message().substr(0, 300);
  EXPECT_NE(s.message().find("recursion limit of 64"), std::string::npos) << s.message().substr(0, 300);
}

// A stray `}` closes a message early; protobuf's parser notices only at the
// next field, which then is unknown where it lands. The error stays at that
// field and says where the field belongs and what to look for.
TEST(Load, AFieldAfterAStrayBraceSaysWhereItBelongs) {
  const std::string text =
      "name: \"t\"\n"                          // 1
      "optimizer { sgd { learning_rate: 0.1 } }\n"  // 2
      "model {\n"                                 // 3
      "  layer { name: \"a\" input: \"image\" flatten {} }\n"  // 4
      "  }\n"                                     // 5: one too many
      "  # a comment between\n"                   // 6
      "  loss { softmax_cross_entropy { logits: \"a\" labels: \"label\" } }\n"  // 7
      "}\n";
  auto loaded = ParseExperiment("t.pbtxt", text);
  ASSERT_FALSE(loaded.ok());
  const std::string msg(loaded.status().message());
  EXPECT_EQ(msg.rfind("t.pbtxt:7:3: error: unknown field 'loss' in Experiment", 0), 0u) << msg;
  EXPECT_NE(msg.find("('loss' is a field of model: is a `}` above this line one too many"), std::string::npos) << msg;

  // No hint where no `}` precedes, or the name is a near miss of a field here.
  loaded = ParseExperiment("t.pbtxt", "name: \"t\"\nloss { }\n");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(std::string(loaded.status().message()).find("one too many"), std::string::npos) << loaded.status();
  loaded = ParseExperiment("t.pbtxt", "model { }\nmodle { }\n");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(std::string(loaded.status().message()).find("did you mean 'model'"), std::string::npos) << loaded.status();
  EXPECT_EQ(std::string(loaded.status().message()).find("one too many"), std::string::npos) << loaded.status();
}

// Issue 22, class 5: the error messages quote the user's token whole, and a
// std::regex over them recursed per character (a megabyte-long name
// overflowed the stack). Names are now found by scanning, and shown cut.
TEST(Load, LongTokensAreScannedAndShownCut) {
  const std::string huge(1 << 20, 'q');
  auto loaded = ParseExperiment("t.pbtxt", absl::StrCat(Base(), huge, " { }\n"));
  ASSERT_FALSE(loaded.ok());
  std::string msg(loaded.status().message());
  EXPECT_EQ(msg.rfind("t.pbtxt:12:1: error: unknown field 'qqqq", 0), 0u) << msg.substr(0, 300);
  EXPECT_NE(msg.find("...(1048576 characters)' in Experiment"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 1000u);
  loaded = ParseExperiment("t.pbtxt", absl::StrReplaceAll(Base(), {{"activation: RELU", "activation: " + huge}}));
  ASSERT_FALSE(loaded.ok());
  msg = std::string(loaded.status().message());
  EXPECT_EQ(msg.rfind("t.pbtxt:4:", 0), 0u) << msg.substr(0, 300);
  EXPECT_NE(msg.find("unknown value 'qqqq"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 1000u);
  // Any other message quoting a long token is cut as a whole.
  loaded = ParseExperiment("t.pbtxt", absl::StrReplaceAll(Base(), {{"steps: 10", "steps: " + huge}}));
  ASSERT_FALSE(loaded.ok());
  msg = std::string(loaded.status().message());
  EXPECT_EQ(msg.rfind("t.pbtxt:11:", 0), 0u) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 1000u);
  // Short names keep their suggestions.
  loaded = ParseExperiment("t.pbtxt", absl::StrReplaceAll(Base(), {{"activation: RELU", "activation: RELUU"}}));
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("did you mean 'RELU'"), std::string::npos) << loaded.status();
}

TEST(Load, MissingFileIsNotFound) {
  auto loaded = LoadExperimentFile("/nonexistent/x.pbtxt");
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace config
}  // namespace sluice
