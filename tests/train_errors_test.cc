// The `train` binary on broken experiments and bad command lines: each gives
// exit code 2 and one error line first on stderr, located as file:line:col
// where the mistake is in the file; none crashes (no signal, no "terminate",
// no "Check failed"), prints a plan, or creates its run directory.
// Some cases also write data files beside the config (IDX files whose headers
// cannot be real). configs/load_test.cc covers the loader and validator as a library; this test
// drives the real binary (fork + exec), as a user or a batch scheduler does.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace {

constexpr char kImages[] = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
constexpr char kLabels[] = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz";
constexpr char kTestImages[] = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
constexpr char kTestLabels[] = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";

// Line numbers in the cases refer to this text (line 1 is `name: ...`).
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

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", workspace ? workspace : "sluice", "/", path);
}

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Outcome {
  bool exited = false;  // false: killed by a signal or timed out
  int code = -1;        // exit code, or the signal number
  bool timed_out = false;
  std::string out, err;
};

// Runs `argv` in `dir` with stdout and stderr captured; kills it after 120 s.
Outcome RunTrain(const std::string& dir, const std::vector<std::string>& argv) {
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) _exit(126);
    dup2(o, 1);
    dup2(e, 2);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  Outcome r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.exited = !r.timed_out && WIFEXITED(status);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : (WIFSIGNALED(status) ? WTERMSIG(status) : -1);
  r.out = ReadAll(out_path);
  r.err = ReadAll(err_path);
  return r;
}

struct Case {
  std::string name;
  std::string from, to;           // replace `from` by `to` in Base(); "" from appends `to`; "=" from: the file is `to`
  std::vector<std::string> args;  // extra arguments after the config (see kNoConfig)
  // Where the error must point: "" no location (a command-line mistake:
  // "error: ..."); "*" the config path only ("PATH: error: ..."); "L:anchor" line L, at the column where `anchor`
  // starts on that line; "L:#C" line L, column C.
  std::string location;
  std::string substring;  // expected in the error line
  // Files the test writes beside the config first: {name, contents} (data
  // files a case points its input at).
  std::vector<std::pair<std::string, std::string>> files = {};
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// As the first of `args`: run train with `args` only (no config file).
constexpr char kNoConfig[] = "<no config>";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  return lines;
}

class TrainErrorsTest : public ::testing::TestWithParam<Case> {};

TEST_P(TrainErrorsTest, ExitsTwoWithOneLocatedErrorLine) {
  const Case& c = GetParam();
  const std::string dir = absl::StrCat(TempDir(), "/", c.name);
  mkdir(dir.c_str(), 0755);
  std::string text = Base();
  if (c.from == "=") {
    text = c.to;
  } else if (c.from.empty()) {
    text += c.to;
  } else {
    ASSERT_NE(text.find(c.from), std::string::npos) << c.from;
    text = absl::StrReplaceAll(text, {{c.from, c.to}});
  }
  {
    std::ofstream f(dir + "/t.pbtxt", std::ios::binary);
    f << text;
  }
  for (const auto& [name, contents] : c.files) {
    std::ofstream f(dir + "/" + name, std::ios::binary);
    f << contents;
  }
  const std::string run_dir = dir + "/run";
  std::vector<std::string> argv = {Runfile("cmd/train/train")};
  if (!c.args.empty() && c.args[0] == kNoConfig) {
    argv.insert(argv.end(), c.args.begin() + 1, c.args.end());
  } else {
    argv.push_back("t.pbtxt");
    argv.push_back("--run_dir");
    argv.push_back(run_dir);
    argv.insert(argv.end(), c.args.begin(), c.args.end());
  }
  Outcome r = RunTrain(dir, argv);

  ASSERT_FALSE(r.timed_out) << "train ran for 120 s on a broken config\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  ASSERT_TRUE(r.exited) << "train was killed by signal " << r.code << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.code, 2) << "stdout:\n" << r.out << "\nstderr:\n" << r.err;
  for (const char* crash : {"terminate called", "Check failed", "Segmentation fault", "Aborted", "what():",
                            "[libprotobuf", "core dumped", "Stack trace"}) {
    EXPECT_FALSE(absl::StrContains(r.err, crash)) << "'" << crash << "' on stderr:\n" << r.err;
  }
  // Nothing ran: no plan on stdout, no run directory.
  EXPECT_EQ(r.out, "") << "train printed (a plan?) before failing";
  struct stat st;
  EXPECT_NE(stat(run_dir.c_str(), &st), 0) << "train created its run directory " << run_dir;

  std::vector<std::string> lines = Lines(r.err);
  ASSERT_FALSE(lines.empty()) << "nothing on stderr";
  const std::string& first = lines[0];
  int error_lines = 0;
  for (const std::string& l : lines) error_lines += absl::StrContains(l, "error:") ? 1 : 0;
  EXPECT_EQ(error_lines, 1) << "expected one error line:\n" << r.err;
  EXPECT_TRUE(absl::StrContains(first, "error: ")) << "the first line is not the error: " << first;
  EXPECT_TRUE(absl::StrContains(first, c.substring)) << "expected '" << c.substring << "' in: " << first;
  // Bounded, whatever the config holds (a megabyte-long name, say).
  EXPECT_LT(first.size(), 1000u) << first.substr(0, 1000);

  if (c.location.empty()) {
    EXPECT_EQ(first.rfind("error: ", 0), 0u) << first;
  } else if (c.location == "*") {
    EXPECT_NE(first.find(": error: "), std::string::npos) << first;
  } else {
    size_t colon = c.location.find(':');
    ASSERT_NE(colon, std::string::npos) << c.location;
    const int line = std::stoi(c.location.substr(0, colon));
    const std::string anchor = c.location.substr(colon + 1);
    int column = 0;
    if (!anchor.empty() && anchor[0] == '#') {
      column = std::stoi(anchor.substr(1));
    } else {
      std::vector<std::string> rows = absl::StrSplit(text, '\n');
      ASSERT_LT(line - 1, static_cast<int>(rows.size()));
      size_t at = rows[line - 1].find(anchor);
      ASSERT_NE(at, std::string::npos) << "anchor '" << anchor << "' not on line " << line;
      column = static_cast<int>(at) + 1;
    }
    const std::string want = absl::StrCat("t.pbtxt:", line, ":", column, ": error: ");
    EXPECT_EQ(first.rfind(want, 0), 0u) << "expected it at " << want << "\n got: " << first;
  }
}

// Ten distinct words: 12 ids with <unk> and <eos>.
constexpr char kTinyCorpus[] = "a b c d e\nf g h i j\na b c d e f g h i j\n";

// A word LSTM on kTinyCorpus (line numbers as the cases say).
std::string TextModel(int vocabulary_size, int num_classes) {
  return absl::StrCat(
      "name: \"t\"\n"                                                                             // 1
      "model {\n"                                                                                  // 2
      "  layer { name: \"embed\" input: \"tokens\" embedding { vocabulary_size: ", vocabulary_size,  // 3
      " dimension: 4 } }\n  layer { name: \"lstm\" input: \"embed\" lstm { units: 4 } }\n"           // 4
      "  loss { sampled_softmax { inputs: \"lstm\" labels: \"targets\" num_classes: ", num_classes,   // 5
      " num_sampled: 2 } }\n}\n"
      "input { train { text { files: \"corpus.txt\" split: ALL seq_len: 3 } batch_size: 2 } }\n"
      "optimizer { sgd { learning_rate: 0.1 } }\n"
      "train { steps: 10 }\n");
}

// A layer line with a raw node before the loss (line 6 becomes the node).
std::string NodeLine(const std::string& node) { return absl::StrCat("  ", node, "\n  loss {"); }

// An IDX file of uint8 elements: the header for `dims`, then `data`.
std::string RawIdx(const std::vector<uint32_t>& dims, const std::string& data = "") {
  std::string out("\0\0\x08", 3);
  out.push_back(static_cast<char>(dims.size()));
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  return out + data;
}

// Line 6 becomes a raw node whose attr nests `levels` functions deep, one
// level per line: `attr { key: "a" value { func { name: "f"` (three
// messages each), then every closing brace on one line. Model and node are
// depths 1 and 2, so the 65th message is the func on line 6 + 21 = 27.
std::string DeepNode(int levels) {
  std::string node = "  node { name: \"deep\" op: \"NoOp\"\n";
  for (int i = 0; i < levels; ++i) node += "attr { key: \"a\" value { func { name: \"f\"\n";
  for (int i = 0; i < levels; ++i) node += "} } }";
  return node + " }\n  loss {";
}

// The two layers before fc1 (lines 3 and 4) replaced: line 3 holds a conv2d
// layer "c" and a flatten of it, line 4 starts fc1 with `units`.
std::pair<std::string, std::string> ConvFlattenDense(const std::string& conv, const std::string& units) {
  return {"  layer { name: \"flat\" input: \"image\" flatten {} }\n  layer { name: \"fc1\" input: \"flat\" dense { units: 16",
          absl::StrCat("  layer { name: \"c\" input: \"image\" conv2d { ", conv,
                       " } } layer { name: \"flat\" input: \"c\" flatten {} }\n  layer { name: \"fc1\" input: \"flat\" "
                       "dense { units: ",
                       units)};
}

INSTANTIATE_TEST_SUITE_P(
    Configs, TrainErrorsTest,
    ::testing::Values(
        // Syntax.
        Case{"syntax_missing_brace", "train { steps: 10 }", "train { steps: 10 ", {}, "12:#1", "Expected identifier"},
        Case{"syntax_bad_integer", "steps: 10", "steps: ten", {}, "11:ten", "Expected integer"},
        Case{"syntax_string_for_integer", "units: 16", "units: \"16\"", {}, "4:\"16\"", "Expected integer"},
        Case{"syntax_unterminated_string", "name: \"t\"", "name: \"t", {}, "1:#9", "String literals cannot cross"},
        Case{"syntax_control_characters", "=", std::string("\x01\x02garbage\n", 10), {}, "1:#1", "control characters"},
        Case{"duplicate_scalar_field", "steps: 10", "steps: 10 steps: 20", {}, "11:steps: 20", "specified multiple times"},
        // Bounds on what the parser is given (issue 22, class 5): nesting
        // a stack deep, and tokens a megabyte long.
        Case{"nesting_deeper_than_the_limit", "  loss {", DeepNode(100000), {}, "27:#30", "recursion limit of 64"},
        Case{"megabyte_unknown_field_name", "", std::string(1 << 20, 'x') + " { }\n", {}, "12:#1",
             "unknown field '" + std::string(60, 'x') + "...(1048576 characters)' in Experiment"},
        Case{"megabyte_enum_value", "activation: RELU", "activation: " + std::string(1 << 20, 'R'), {}, "4:RRRR",
             "unknown value 'RRRR"},
        Case{"two_optimizers", "sgd { learning_rate: 0.1 }", "sgd { learning_rate: 0.1 } adam { learning_rate: 0.1 }",
             {}, "10:adam", "oneof"},
        // Unknown names, with did-you-mean.
        Case{"unknown_top_level_field", "", "trian { steps: 3 }\n", {}, "12:trian", "did you mean 'train'"},
        Case{"unknown_layer_kind", "flatten {}", "flaten {}", {}, "3:flaten", "did you mean 'flatten'"},
        Case{"unknown_dense_field", "units: 16", "unit: 16", {}, "4:unit", "did you mean 'units'"},
        Case{"unknown_enum_value", "activation: RELU", "activation: RELUU", {}, "4:RELUU", "did you mean 'RELU'"},
        // Layer wiring.
        Case{"dangling_layer_input", "input: \"fc1\"", "input: \"fc_1\"", {}, "5:input", "did you mean 'fc1'"},
        Case{"layer_reads_a_later_layer", "input: \"flat\"", "input: \"logits\"", {}, "4:input", "defined later"},
        Case{"duplicate_layer_name", "  layer { name: \"logits\"",
             "  layer { name: \"fc1\" input: \"fc1\" dense { units: 16 } }\n  layer { name: \"logits\"", {}, "5:name",
             "layer name 'fc1' is used twice"},
        Case{"layer_with_two_inputs", "input: \"flat\" dense", "input: \"flat\" input: \"image\" dense", {},
             "4:input: \"image\"", "takes one input"},
        Case{"add_of_two_shapes", "  layer { name: \"logits\"",
             "  layer { name: \"sum\" input: \"fc1\" input: \"flat\" add {} }\n  layer { name: \"logits\"", {},
             "5:name", "layer 'sum': add needs inputs of one shape, but 'fc1' is [batch,16] float and 'flat' is [batch,784] float"},
        Case{"batch_norm_of_rank_one", "  layer { name: \"logits\"",
             "  layer { name: \"bn\" input: \"label\" batch_norm {} }\n  layer { name: \"logits\"", {},
             "5:name", "layer 'bn': batch_norm needs a [batch, features], [batch, time, features] or [batch, height, "
             "width, channels] input with a known last dimension, but 'label' is [batch]"},
        Case{"augment_of_labels", "  layer { name: \"logits\"",
             "  layer { name: \"aug\" input: \"label\" augment { flip_left_right: true } }\n  layer { name: \"logits\"", {},
             "5:name", "layer 'aug': augment needs images [batch, height, width, channels], but 'label' is [batch]"},
        Case{"augment_shift_past_the_image", "  layer { name: \"logits\"",
             "  layer { name: \"aug\" input: \"image\" augment { max_shift: 28 } }\n  layer { name: \"logits\"", {},
             "5:name", "layer 'aug': augment max_shift 28 must be below the images' height (28)"},
        Case{"concat_of_two_ranks", "  layer { name: \"logits\"",
             "  layer { name: \"both\" input: \"fc1\" input: \"image\" concat {} }\n  layer { name: \"logits\"", {},
             "5:name", "layer 'both': concat needs inputs of one rank, but 'fc1' is [batch,16] float and 'image' is "},
        Case{"dangling_loss_logits", "logits: \"logits\"", "logits: \"logit\"", {}, "6:logits:", "did you mean 'logits'"},
        Case{"no_loss", "  loss { softmax_cross_entropy { logits: \"logits\" labels: \"label\" } }\n", "", {}, "2:model",
             "at least one 'loss'"},
        // Sizes.
        Case{"zero_units", "units: 16", "units: 0", {}, "4:units", "units must be > 0"},
        Case{"negative_units", "units: 10", "units: -10", {}, "5:units", "units must be > 0"},
        Case{"units_beyond_int32", "units: 16", "units: 99999999999", {}, "4:units", "at most 2147483647"},
        Case{"weights_beyond_memory", "units: 16", "units: 2000000000", {}, "4:name", "more than this machine's"},
        Case{"zero_conv_filters", "flatten {}", "conv2d { filters: 0 kernel_size: 3 }", {}, "3:filters",
             "filters must be > 0"},
        Case{"negative_kernel_size", "flatten {}", "conv2d { filters: 4 kernel_size: -3 }", {}, "3:kernel_size",
             "kernel_size must be > 0"},
        Case{"negative_pool_size", "flatten {}", "max_pool { size: -2 }", {}, "3:size", "pool size must be > 0"},
        Case{"negative_batch_size", "batch_size: 32", "batch_size: -4", {}, "9:batch_size", "batch_size must be > 0"},
        Case{"batch_size_beyond_int32", "batch_size: 32", "batch_size: 1000000000000", {}, "9:batch_size",
             "at most 2147483647"},
        // 2e9 examples of 810 floats and their gradients: terabytes, past any machine's memory.
        Case{"batch_past_this_machines_memory", "batch_size: 32", "batch_size: 2000000000", {}, "9:batch_size",
             "is more than this machine's"},
        Case{"zero_steps", "steps: 10", "steps: 0", {}, "11:train", "train.steps must be > 0"},
        Case{"negative_reader_threads", "batch_size: 32", "batch_size: 32 reader_threads: -2", {}, "9:reader_threads",
             "reader_threads must be > 0"},
        Case{"shuffle_capacity_below_min", "batch_size: 32", "batch_size: 32 shuffle { capacity: 10 min_after_dequeue: 20 }",
             {}, "9:capacity", "must exceed min_after_dequeue"},
        // Shapes and types.
        Case{"dense_without_flatten", "input: \"flat\" dense", "input: \"image\" dense", {}, "4:name",
             "add a flatten layer"},
        Case{"conv_on_flat_input", "dense { units: 16 activation: RELU }", "conv2d { filters: 4 kernel_size: 3 }", {},
             "4:name", "conv2d needs a [batch, height, width, channels] input"},
        Case{"conv_window_larger_than_image", "flatten {}", "conv2d { filters: 4 kernel_size: 40 padding: VALID }", {},
             "3:name", "does not fit"},
        Case{"reshape_size_mismatch", "flatten {}", "reshape { shape: 7 shape: 7 }", {}, "3:name", "cannot reshape"},
        Case{"embedding_of_float_input", "flatten {}", "embedding { vocabulary_size: 10 dimension: 4 }", {}, "3:name",
             "embedding needs integer ids"},
        Case{"mse_with_integer_targets", "softmax_cross_entropy { logits: \"logits\" labels: \"label\" }",
             "mean_squared_error { predictions: \"logits\" targets: \"label\" }", {}, "6:targets", "must be floating point"},
        Case{"mse_shape_mismatch", "softmax_cross_entropy { logits: \"logits\" labels: \"label\" }",
             "mean_squared_error { predictions: \"logits\" targets: \"fc1\" }", {}, "6:targets",
             "[batch,10] and targets [batch,16] differ"},
        Case{"cross_entropy_on_images", "logits: \"logits\"", "logits: \"image\"", {}, "6:logits:",
             "must be [batch, classes]"},
        Case{"raw_node_unknown_op", "  loss {", NodeLine("node { name: \"n\" op: \"NoSuchOp\" input: \"fc1\" }"), {},
             "6:op:", "unknown op 'NoSuchOp'"},
        Case{"raw_node_dangling_input", "  loss {",
             NodeLine("node { name: \"n\" op: \"Relu\" input: \"fc9\" attr { key: \"T\" value { type: DT_FLOAT } } }"), {},
             "6:input", "did you mean 'fc1'"},
        Case{"raw_node_missing_attr", "  loss {", NodeLine("node { name: \"n\" op: \"Relu\" input: \"fc1\" }"), {},
             "6:op:", "missing attr 'T'"},
        Case{"raw_node_matmul_shape_mismatch", "  loss {",
             absl::StrCat("  node { name: \"W\" op: \"VariableV2\" attr { key: \"dtype\" value { type: DT_FLOAT } }"
                          " attr { key: \"shape\" value { shape { dim { size: 3 } dim { size: 10 } } } } }\n",
                          "  node { name: \"m\" op: \"MatMul\" input: \"fc1\" input: \"W\""
                          " attr { key: \"T\" value { type: DT_FLOAT } } }\n",
                          "  loss { mean_squared_error { predictions: \"m\" targets: \"logits\" } }\n  loss {"),
             {}, "7:name", "inner dimensions differ"},
        // Placement (issue 14): a layer's or raw node's device, and devices { }.
        Case{"device_unknown_part", "input: \"flat\" dense", "input: \"flat\" device: \"/job:localhost/tsk:0\" dense", {}, "4:device", "unknown part 'tsk' (did you mean 'task'?)"},
        Case{"device_bad_id", "input: \"flat\" dense", "input: \"flat\" device: \"/device:CPU:x\" dense", {}, "4:device", "device id 'x' is not a number"},
        Case{"device_duplicate_part", "input: \"flat\" dense", "input: \"flat\" device: \"/job:a/job:b\" dense", {}, "4:device", "duplicate part 'job'"},
        Case{"device_without_slash", "input: \"flat\" dense", "input: \"flat\" device: \"device:CPU:0\" dense", {}, "4:device", "must start with '/'"},
        Case{"device_cpu_out_of_range", "input: \"flat\" dense", "input: \"flat\" device: \"/device:CPU:5\" dense", {}, "4:device", "this process has 1 CPU device(s)"},
        Case{"device_cpu_out_of_range_of_two", "input: \"flat\" dense", "input: \"flat\" device: \"/device:CPU:2\" dense", {"--set", "devices.cpu_devices=2"}, "4:device",
             "this process has 2 CPU device(s), CPU:0 to CPU:1"},
        Case{"device_gpu_without_soft_placement", "input: \"flat\" dense", "input: \"flat\" device: \"/device:GPU:0\" dense", {}, "4:device", "this process has no GPU devices"},
        Case{"device_tpu", "input: \"flat\" dense", "input: \"flat\" device: \"/device:TPU:0\" dense", {}, "4:device", "this process has no TPU devices"},
        Case{"device_job_without_cluster", "input: \"flat\" dense", "input: \"flat\" device: \"/job:ps\" dense", {}, "4:device", "no job 'ps'"},
        Case{"device_other_task", "input: \"flat\" dense", "input: \"flat\" device: \"/job:localhost/task:3\" dense", {}, "4:device", "one task"},
        Case{"cluster_tls_incomplete", "", "cluster { tls { cert_file: \"task.pem\" } }\n", {}, "12:tls",
             "cluster.tls needs cert_file, key_file and ca_file together"},
        Case{"cluster_start_timeout_negative", "", "cluster { start_timeout_secs: -1 }\n", {}, "12:start_timeout_secs",
             "start_timeout_secs must be >= 0"},
        Case{"device_job_unknown", "input: \"flat\" dense", "input: \"flat\" device: \"/job:chief\" dense", {}, "4:device",
             "no job 'chief'"},
        Case{"cpu_devices_negative", "", "devices { cpu_devices: -1 }\n", {}, "12:cpu_devices", "cpu_devices must be in [0, 256]"},
        Case{"cpu_devices_too_many", "", "devices { cpu_devices: 1000 }\n", {}, "12:cpu_devices", "got 1000"},
        Case{"measured_costs_without_cost_model", "", "devices { measured_costs: \"t.json\" }\n", {}, "12:measured_costs",
             "measured_costs needs devices { placer: COST_MODEL }"},
        Case{"placer_unknown_number", "", "devices { placer: 7 }\n", {}, "12:placer", "placer must be SIMPLE or COST_MODEL, got 7"},
        Case{"measured_costs_missing_file", "", "devices { placer: COST_MODEL measured_costs: \"/nonexistent/step_3.json\" }\n",
             {}, "12:measured_costs", "/nonexistent/step_3.json"},
        Case{"measured_costs_not_json", "", "devices { placer: COST_MODEL measured_costs: \"t.pbtxt\" }\n", {},
             "12:measured_costs", "t.pbtxt"},
        Case{"measured_costs_of_another_model", "", "devices { placer: COST_MODEL measured_costs: \"other.json\" }\n", {},
             "12:measured_costs", "none of them in this experiment's graph",
             {{"other.json", R"({"traceEvents":[{"ph":"X","name":"not/in/this/model","pid":0,"tid":1,"ts":0,"dur":5,"args":{"op":"MatMul"}}]})"}}},
        // fc1/Relu exists, but the trace's node of that name was the fused product (its time is not the Relu's).
        Case{"measured_costs_of_a_fused_node", "", "devices { placer: COST_MODEL measured_costs: \"fused.json\" }\n", {},
             "12:measured_costs", "none of them in this experiment's graph as the same op",
             {{"fused.json", R"({"traceEvents":[{"ph":"X","name":"fc1/Relu","pid":0,"tid":1,"ts":0,"dur":5,"args":{"op":"_FusedMatMul"}}]})"}}},
        Case{"raw_node_device_bad", "  loss {",
             NodeLine("node { name: \"n\" op: \"NoOp\" device: \"/device:CPU:one\" }"), {}, "6:device",
             "device id 'one' is not a number"},
        // A raw Assign on CPU:1 writes fc1's kernel, which lives with fc1 on CPU:0: a reference edge
        // ties them to one device, so the two requests conflict (found on the graph, at --validate).
        Case{"placement_reference_edge_conflict", "  loss {",
             absl::StrCat("  node { name: \"n\" op: \"Assign\" input: \"fc1/kernel\" input: \"fc1/kernel\""
                          " device: \"/device:CPU:1\" attr { key: \"T\" value { type: DT_FLOAT } } }\n  loss {"),
             {"--set", "devices.cpu_devices=2", "--set", "model.layer[1].device=/device:CPU:0"}, "6:device",
             "CPU:1"},
        Case{"dropout_rate_one", "flatten {}", "dropout { rate: 1.0 }", {}, "3:rate", "dropout rate must be in [0, 1)"},
        // Products of sizes that pass one by one (issue 22, class 4).
        Case{"conv_kernel_product_overflows", "flatten {}", "conv2d { filters: 2147483647 kernel_size: 65536 }", {},
             "3:name", "its kernel [65536,65536,1,2147483647] has 9.22e+18 float32 values"},
        Case{"dense_after_a_huge_flatten", ConvFlattenDense("filters: 2147483647 kernel_size: 1", "2147483647").first,
             ConvFlattenDense("filters: 2147483647 kernel_size: 1", "2147483647").second, {}, "3:name",
             "more than this machine's"},
        Case{"dense_kernel_product_beyond_memory", ConvFlattenDense("filters: 100000 kernel_size: 1", "2147483647").first,
             ConvFlattenDense("filters: 100000 kernel_size: 1", "2147483647").second, {}, "4:name",
             "its kernel [78400000,2147483647] has"},
        Case{"reshape_dims_wrap_to_zero", "flatten {}", "reshape { shape: -1 shape: 4294967296 shape: 4294967296 }", {},
             "3:name", "cannot reshape [batch,28,28,1] (784 values per example) to [batch,-1,4294967296,4294967296]"},
        Case{"embedding_table_beyond_memory", "input: \"image\" flatten {}",
             "input: \"label\" embedding { vocabulary_size: 2147483647 dimension: 2147483647 }", {}, "3:name",
             "its embedding table [2147483647,2147483647] has"},
        // Data files.
        Case{"missing_images_file", kImages, "/nonexistent/images.gz", {}, "8:images", "does not exist"},
        Case{"images_path_is_a_directory", kImages, "/usr/share", {}, "8:images", "is not a regular file"},
        Case{"images_file_is_not_idx", kImages, "t.pbtxt", {}, "8:train", "not an IDX file"},
        Case{"images_and_labels_swapped", absl::StrCat(kImages, "\" labels: \"", kLabels),
             absl::StrCat(kLabels, "\" labels: \"", kImages), {}, "8:train", "must be uint8 images"},
        Case{"image_and_label_counts_differ", kLabels, kTestLabels, {}, "8:train", "holds 60000 images but"},
        // Data files whose headers cannot be real (issue 22, class 2): checked at the header, named.
        Case{"idx_zero_dim_then_huge_dims", kImages, "zero_dim.idx", {}, "8:train",
             "zero_dim.idx: IDX header dimension 1 is 4294967295",
             {{"zero_dim.idx", RawIdx({0, 0xffffffffu, 0xffffffffu, 0xffffffffu})}}},
        Case{"idx_2_to_the_32_items_of_nothing",
             absl::StrCat(kImages, "\" labels: \"", kLabels, "\" }\n                batch_size: 32"),
             "items.idx\" labels: \"items.idx\" }\n                batch_size: 32 shuffle { capacity: 100 min_after_dequeue: 10 }",
             {},
             "8:train", "items.idx: IDX header dimension 0 is 4294967295", {{"items.idx", RawIdx({0xffffffffu, 0})}}},
        // A text input's word ids reach past the tables indexed by them.
        Case{"embedding_smaller_than_the_text_vocabulary", "=", TextModel(4, 40), {}, "3:vocabulary_size",
             "vocabulary_size 4 is smaller than the ids of its input 'tokens', which go up to 11",
             {{"corpus.txt", kTinyCorpus}}},
        Case{"sampled_softmax_smaller_than_the_text_vocabulary", "=", TextModel(40, 5), {}, "5:num_classes",
             "num_classes 5 is smaller than the ids of its labels 'targets', which go up to 11",
             {{"corpus.txt", kTinyCorpus}}},
        Case{"idx_items_without_data", kImages, "items.idx", {}, "8:train",
             "items.idx: IDX header dimension 1 is 0, so none of its 60000 items holds any data",
             {{"items.idx", RawIdx({60000, 0, 28})}}},
        Case{"idx_header_describes_more_than_the_file", kImages, "short.idx", {}, "8:train",
             "short.idx: truncated IDX data: the header describes 47040000 bytes, the file has 16",
             {{"short.idx", RawIdx({60000, 28, 28}, std::string(16, '\0'))}}},
        Case{"missing_eval_file", "batch_size: 32 } }",
             absl::StrCat("batch_size: 32 }\n  eval { idx { images: \"/nonexistent\" labels: \"", kTestLabels, "\" } } }"),
             {}, "10:images", "does not exist"},
        // Optimizer and schedule.
        Case{"zero_learning_rate", "learning_rate: 0.1", "learning_rate: 0", {}, "10:learning_rate",
             "learning_rate must be a positive"},
        Case{"negative_learning_rate", "learning_rate: 0.1", "learning_rate: -0.1", {}, "10:learning_rate",
             "learning_rate must be a positive"},
        Case{"nan_learning_rate", "learning_rate: 0.1", "learning_rate: nan", {}, "10:learning_rate",
             "learning_rate must be a positive"},
        Case{"infinite_learning_rate", "learning_rate: 0.1", "learning_rate: inf", {}, "10:learning_rate",
             "learning_rate must be a positive"},
        Case{"momentum_above_one", "sgd { learning_rate: 0.1 }", "momentum { learning_rate: 0.1 momentum: 1.5 }", {},
             "10:momentum:", "momentum must be in [0, 1)"},
        Case{"adam_beta1_one", "sgd { learning_rate: 0.1 }", "adam { learning_rate: 0.1 beta1: 1.0 }", {}, "10:beta1",
             "beta1 must be in [0, 1)"},
        Case{"zero_decay_steps", "sgd { learning_rate: 0.1 }",
             "sgd { learning_rate: 0.1 } schedule { exponential_decay { decay_steps: 0 decay_rate: 0.5 } }", {},
             "10:decay_steps", "decay_steps must be > 0"},
        Case{"negative_clip_norm", "sgd { learning_rate: 0.1 }", "sgd { learning_rate: 0.1 } clip_global_norm: -1", {},
             "10:clip_global_norm", "clip_global_norm must be >= 0"},
        // Other sections.
        Case{"bad_experiment_name", "name: \"t\"", "name: \"my run\"", {}, "1:name", "may only hold"},
        Case{"metrics_port_out_of_range", "", "monitoring { metrics_port: 70000 }\n", {}, "12:metrics_port",
             "metrics_port"},
        Case{"bad_cluster_job_name", "", "cluster { job { name: \"workers\" task: \"127.0.0.1:1\" } }\n", {}, "12:name",
             "did you mean 'worker'"},
        // Cluster identity (issue 15): which task this process is.
        Case{"job_without_task", "", "", {"--job", "worker"}, "*", "--job was given without --task"},
        Case{"task_not_a_number", "", "", {"--task", "two"}, "", "--task needs a task index >= 0, got 'two'"},
        Case{"task_without_cluster", "", "", {"--job", "worker", "--task", "0"}, "*",
             "names a task, but no cluster is defined"},
        Case{"task_outside_the_cluster", "", "cluster { job { name: \"worker\" task: \"127.0.0.1:2223\" } }\n",
             {"--job", "worker", "--task", "3"}, "*", "the task from --job/--task (worker:3) is not in the cluster"},
        Case{"cluster_without_a_task", "", "cluster { job { name: \"worker\" task: \"127.0.0.1:2223\" } }\n", {}, "*",
             "nothing says which one this process is"},
        Case{"sync_replication_without_workers", "",
             "cluster { job { name: \"ps\" task: \"127.0.0.1:1\" } }\nreplication { sync { replicas_to_aggregate: 2 } }\n",
             {}, "13:replication", "needs a 'worker' job"},
        Case{"replication_without_ps", "",
             "cluster { job { name: \"worker\" task: \"127.0.0.1:1\" } }\nreplication { async {} }\n", {},
             "13:replication", "needs a 'ps' job"},
        Case{"too_many_intra_op_threads", "", "devices { intra_op_threads: 100000 }\n", {}, "12:intra_op_threads",
             "intra_op_threads must be in [0, 1024]"},
        // --set overrides: checked like the file (located there) or named as the flag.
        Case{"set_negative_steps", "", "", {"--set", "train.steps=-1"}, "11:steps",
             "train.steps must be > 0, got -1 (set by --set train.steps=-1)"},
        Case{"set_zero_learning_rate", "", "", {"--set", "optimizer.sgd.learning_rate=0"}, "10:learning_rate",
             "learning_rate must be a positive"},
        Case{"set_unknown_field", "", "", {"--set", "train.step=5"}, "", "did you mean 'steps'"},
        Case{"set_value_not_a_number", "", "", {"--set", "train.steps=many"}, "", "'many' is not a valid int64"},
        Case{"set_without_equals", "", "", {"--set", "train.steps"}, "", "expected field.path=value"},
        Case{"set_bad_enum", "", "", {"--set", "model.layer[1].dense.activation=RELUX"}, "", "did you mean 'RELU'"},
        Case{"set_index_out_of_range", "", "", {"--set", "model.layer[9].name=x"}, "", "out of range"},
        Case{"set_bad_message_text", "", "", {"--set", "optimizer.adam={learning_rate:}"}, "", "not a valid Adam"},
        Case{"set_missing_argument", "", "", {"--set"}, "", "--set needs field.path=value"},
        // Command line.
        Case{"unknown_flag", "", "", {"--frobnicate"}, "", "unknown flag --frobnicate"},
        Case{"job_without_its_name", "", "", {"--job", "--task", "0"}, "", "--job needs a job name"},
        Case{"trace_steps_past_the_last_step", "", "", {"--trace_steps=100-200"}, "",
             "starts after the run's last step, 10"},
        Case{"trace_device_time_without_trace_steps", "", "", {"--trace_device_time"}, "",
             "--trace_device_time needs --trace_steps=A-B"},
        Case{"two_config_files", "", "", {"other.pbtxt"}, "", "more than one CONFIG"},
        Case{"run_dir_without_value", "", "", {kNoConfig, "t.pbtxt", "--run_dir"}, "", "--run_dir needs a directory"},
        Case{"missing_config_file", "", "", {kNoConfig, "/nonexistent/x.pbtxt"}, "*",
             "cannot open the experiment file: No such file or directory"},
        Case{"config_is_a_directory", "", "", {kNoConfig, "/usr/share"}, "*", "is a directory"},
        // --validate checks the run directory as the run would (and creates nothing).
        Case{"validate_run_dir_is_a_file", "", "", {"--validate", "--run_dir", "afile"}, "*",
             "run_dir afile is a file, not a directory", {{"afile", "not a run directory"}}}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Every example experiment we ship validates as its header says to run it
// (a "# Run..." line's --local_cluster, if any). figure1_relu once failed:
// its logits are a raw node, whose shape the builder did not infer.
TEST(TrainBinary, EveryShippedConfigValidates) {
  const std::string configs = Runfile("configs");
  DIR* d = opendir(configs.c_str());
  ASSERT_NE(d, nullptr) << configs;
  std::vector<std::string> names;
  while (dirent* entry = readdir(d)) {
    if (absl::EndsWith(entry->d_name, ".pbtxt")) names.push_back(entry->d_name);
  }
  closedir(d);
  EXPECT_GE(names.size(), 10u);
  for (const std::string& name : names) {
    std::vector<std::string> argv = {Runfile("cmd/train/train"), configs + "/" + name, "--validate"};
    for (const std::string& line : Lines(ReadAll(configs + "/" + name))) {
      const size_t flag = line.find(" --local_cluster ");
      if (absl::StartsWith(line, "# Run") && flag != std::string::npos) {
        std::vector<std::string> words = absl::StrSplit(line.substr(flag + 1), ' ', absl::SkipEmpty());
        if (words.size() >= 2) argv.insert(argv.end(), {words[0], words[1]});
      }
    }
    const std::string dir = absl::StrCat(TempDir(), "/validate_", name);
    mkdir(dir.c_str(), 0755);
    Outcome r = RunTrain(dir, argv);
    EXPECT_TRUE(r.exited && r.code == 0) << absl::StrJoin(argv, " ") << ": code " << r.code << "\n" << r.err;
    EXPECT_TRUE(absl::StrContains(r.out + r.err, name + ": OK")) << name << "\n" << r.out << r.err;
  }
}

// A replicated config started as one plain process trains alone; the plan
// says so and how to start the cluster it asks for.
TEST(TrainBinary, AReplicatedConfigOutsideAClusterSaysItTrainsAlone) {
  const std::string dir = absl::StrCat(TempDir(), "/replicated_alone");
  mkdir(dir.c_str(), 0755);
  const std::vector<std::string> argv = {Runfile("cmd/train/train"), Runfile("configs/fashion_mlp_sync.pbtxt"),
                                         "--validate", "--run_dir", dir + "/run"};
  Outcome r = RunTrain(dir, argv);
  EXPECT_TRUE(r.exited && r.code == 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "  replication    sync asked for, but this process is not in a cluster: it "
                                       "trains alone (start a cluster with --local_cluster ps=1,worker=2"))
      << r.out;
  // With the cluster, the plan shows the replication instead.
  const std::vector<std::string> with_cluster = {Runfile("cmd/train/train"), Runfile("configs/fashion_mlp_sync.pbtxt"),
                                                 "--validate", "--run_dir", dir + "/run2", "--local_cluster",
                                                 "ps=1,worker=2"};
  r = RunTrain(dir, with_cluster);
  EXPECT_TRUE(r.exited && r.code == 0) << r.err;
  EXPECT_FALSE(absl::StrContains(r.out + r.err, "not in a cluster")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out + r.err, "replication    sync: 2 of 2 workers' gradients per step")) << r.out;
}

// Starts `argv` with stdout and stderr into `out_path`; returns its pid.
pid_t StartInBackground(const std::vector<std::string>& argv, const std::string& out_path) {
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0) _exit(126);
    dup2(o, 1);
    dup2(o, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Waits (at most 60 s) for train's first progress line in `out_path`.
void WaitForTrainingToStart(const std::string& out_path) {
  const auto start = std::chrono::steady_clock::now();
  while (!absl::StrContains(ReadAll(out_path), "\nstep ") &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Waits (at most 60 s) for `pid` to end, then kills it; true if it ended by itself.
bool WaitOrKill(pid_t pid, int* status) {
  for (int i = 0; i < 1200; ++i) {
    if (waitpid(pid, status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, status, 0);
  return false;
}

// A fixed metrics_port that another process holds fails the start with 129
// (retryable) before anything goes into the run directory: it used to leave
// an event file, checkpoints/, config.pbtxt and provenance.txt in a
// directory the run never used.
TEST(TrainBinary, ATakenMetricsPortLeavesNothingInTheRunDirectory) {
  const int holder = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(holder, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);

  const std::string dir = absl::StrCat(TempDir(), "/taken_metrics_port");
  mkdir(dir.c_str(), 0755);
  const std::string run_dir = dir + "/run";
  Outcome outcome = RunTrain(dir, {Runfile("cmd/train/train"), Runfile("configs/fashion_mlp.pbtxt"), "--run_dir",
                                   run_dir, "--set", absl::StrCat("monitoring.metrics_port=", port), "--set",
                                   "train.steps=5", "--set", "devices.intra_op_threads=1"});
  close(holder);
  EXPECT_TRUE(outcome.exited) << outcome.err;
  EXPECT_EQ(outcome.code, 129) << outcome.err;
  EXPECT_TRUE(absl::StrContains(outcome.err, absl::StrCat("cannot serve on 127.0.0.1:", port, ": the port is in use")))
      << outcome.err;
  struct stat st;
  EXPECT_NE(stat(run_dir.c_str(), &st), 0) << run_dir << " was created";
}

// A second train on a run directory in use is refused (129: retry when the
// first ends); two runs once interleaved their checkpoints and both
// "succeeded". The lock goes with the first process.
TEST(TrainBinary, ARunDirectoryInUseIsRefused) {
  const std::string dir = absl::StrCat(TempDir(), "/run_dir_in_use");
  mkdir(dir.c_str(), 0755);
  const std::vector<std::string> argv = {Runfile("cmd/train/train"), Runfile("configs/fashion_mlp.pbtxt"), "--run_dir",
                                         dir + "/run", "--set", "train.steps=1000000", "--set",
                                         "train.eval_every_steps=0", "--set", "monitoring.metrics_port=-1", "--set",
                                         "devices.intra_op_threads=1"};
  const std::string first_out = dir + "/first.log";
  const pid_t first = StartInBackground(argv, first_out);
  ASSERT_GT(first, 0);
  WaitForTrainingToStart(first_out);
  Outcome second = RunTrain(dir, argv);
  kill(first, SIGTERM);
  int status = 0;
  const bool ended = WaitOrKill(first, &status);
  EXPECT_TRUE(second.exited) << second.err;
  EXPECT_EQ(second.code, 129) << second.err;
  EXPECT_TRUE(absl::StrContains(second.err, absl::StrCat("is in use by another train (pid ", first, ")"))) << second.err;
  ASSERT_TRUE(ended) << ReadAll(first_out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 143) << ReadAll(first_out);
  // The first has ended: the directory is free again (a resume, told to
  // stop at once: its step is past the new train.steps).
  std::vector<std::string> resume = argv;
  resume[5] = "train.steps=1";
  resume.push_back("--allow-drift");
  Outcome third = RunTrain(dir, resume);
  EXPECT_TRUE(third.exited && third.code == 0) << third.code << "\n" << third.err;
}

// SIGTERM delivered twice within a second (timeout(1) signals the process
// and then its process group) is one request: the run checkpoints and exits 143. It
// once counted as the second, "leave now" signal and lost the checkpoint.
TEST(TrainBinary, ASignalDeliveredTwiceWithinASecondStillCheckpoints) {
  const std::string dir = absl::StrCat(TempDir(), "/double_signal");
  mkdir(dir.c_str(), 0755);
  const std::string out_path = dir + "/stdout";
  std::vector<std::string> argv = {Runfile("cmd/train/train"), Runfile("configs/fashion_mlp.pbtxt"), "--run_dir",
                                   dir + "/run", "--set", "train.steps=1000000", "--set",
                                   "checkpoint.every_steps=1000000", "--set", "train.eval_every_steps=0", "--set",
                                   "monitoring.metrics_port=-1", "--set", "devices.intra_op_threads=1"};
  const pid_t pid = StartInBackground(argv, out_path);
  ASSERT_GT(pid, 0);
  WaitForTrainingToStart(out_path);
  // 5 ms apart: far enough for the second to reach the handler on its own
  // (two pending at once merge into one), near enough to come before the
  // checkpoint is written.
  kill(pid, SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_TRUE(WaitOrKill(pid, &status)) << ReadAll(out_path);
  ASSERT_TRUE(WIFEXITED(status)) << ReadAll(out_path);
  EXPECT_EQ(WEXITSTATUS(status), 143) << ReadAll(out_path);
  const std::string out = ReadAll(out_path);
  EXPECT_TRUE(absl::StrContains(out, "saved " + dir + "/run/checkpoints/ckpt-")) << out;
  EXPECT_TRUE(absl::StrContains(out, "stopped by signal at step")) << out;
}

// Not an error case, but the binary-level spec a bug broke: the same
// train.seed gives the same initial weights in every process (the op seeds
// were once absl::Hash of names, which Abseil salts per process). A learning
// rate of 1e-30 leaves the weights as initialized; the eval after one step is
// the untrained model's test-set loss and accuracy.
TEST(TrainBinary, SameSeedGivesTheSameInitialWeightsInEveryProcess) {
  std::vector<std::string> evals;
  for (int i = 0; i < 2; ++i) {
    const std::string dir = absl::StrCat(TempDir(), "/same_seed_", i);
    mkdir(dir.c_str(), 0755);
    Outcome r = RunTrain(dir, {Runfile("cmd/train/train"), Runfile("configs/fashion_mlp.pbtxt"), "--run_dir",
                               dir + "/run", "--set", "optimizer.momentum={learning_rate: 1e-30}", "--set",
                               "optimizer.schedule={}", "--set", "train.steps=1", "--set", "train.seed=7", "--set",
                               "train.eval_every_steps=0", "--set", "checkpoint.every_steps=0", "--set",
                               "monitoring.metrics_port=-1"});
    ASSERT_TRUE(r.exited && r.code == 0) << "code " << r.code << "\n" << r.err;
    std::string eval;
    for (const std::string& line : Lines(r.out)) {
      if (absl::StrContains(line, "eval at step 1:")) eval = line;
    }
    ASSERT_FALSE(eval.empty()) << r.out;
    evals.push_back(eval);
  }
  EXPECT_EQ(evals[0], evals[1]);
}

}  // namespace
