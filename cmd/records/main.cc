// records: converts the Fashion-MNIST IDX files into sharded TFRecord files
// of tf.train.Examples {image: bytes (28*28 uint8, row-major), label: int64},
// the input of the in-graph pipeline (inputs/FORMATS.md).
//
//   records --output_dir=DIR [--input_dir=/usr/share/datasets/fashion-mnist]
//           [--shards=4] [--splits=train,t10k]
//
// Writes DIR/<split>-SSSSS-of-NNNNN.tfrecord (examples dealt round-robin
// over the shards, so every shard holds every class), with a progress line on
// stderr when it is a terminal. Each shard is written to a temporary name and
// renamed when complete; shards of the split with another count, left by an
// earlier run, are then removed. Every split's input is checked before any is
// written. Flags take "--flag=VALUE" or "--flag VALUE". Exit codes: 0 done,
// 1 bad data or I/O error (the message names the file), 2 usage error.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/platform/env.h"
#include "inputs/example.pb.h"
#include "inputs/idx.h"
#include "engine/platform/record_writer.h"

namespace sluice {
namespace {

constexpr char kUsage[] =
    "usage: records --output_dir=DIR [--input_dir=DIR] [--shards=N] [--splits=train,t10k]\n"
    "Converts Fashion-MNIST IDX files (<split>-images-idx3-ubyte.gz, <split>-labels-idx1-ubyte.gz)\n"
    "into DIR/<split>-SSSSS-of-NNNNN.tfrecord files of tf.train.Examples {image, label}.\n";

struct Args {
  std::string input_dir = "/usr/share/datasets/fashion-mnist";
  std::string output_dir;
  int shards = 4;
  std::vector<std::string> splits = {"train", "t10k"};
};

// Returns an error message for bad usage, "" when fine.
std::string ParseArgs(int argc, char** argv, Args* args, bool* help) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      *help = true;
      return "";
    }
    std::vector<std::string> kv = absl::StrSplit(a, absl::MaxSplits('=', 1));
    // --flag VALUE as well as --flag=VALUE.
    if (kv.size() == 1 && kv[0].rfind("--", 0) == 0 && i + 1 < argc) kv.push_back(argv[++i]);
    if (kv.size() != 2 || kv[0].rfind("--", 0) != 0) return absl::StrCat("unexpected argument '", a, "'");
    const std::string& key = kv[0];
    const std::string& value = kv[1];
    if (key == "--input_dir") {
      args->input_dir = value;
    } else if (key == "--output_dir") {
      args->output_dir = value;
    } else if (key == "--shards") {
      if (!absl::SimpleAtoi(value, &args->shards) || args->shards < 1 || args->shards > 99999) {
        return absl::StrCat("--shards must be an integer from 1 to 99999, got '", value, "'");
      }
    } else if (key == "--splits") {
      args->splits = absl::StrSplit(value, ',', absl::SkipEmpty());
      if (args->splits.empty()) return "--splits is empty";
    } else {
      return absl::StrCat("unknown flag '", key, "'");
    }
  }
  if (args->output_dir.empty()) return "--output_dir is required";
  return "";
}

std::string ImagesPath(const Args& args, const std::string& split) {
  return JoinPath(args.input_dir, split + "-images-idx3-ubyte.gz");
}
std::string LabelsPath(const Args& args, const std::string& split) {
  return JoinPath(args.input_dir, split + "-labels-idx1-ubyte.gz");
}

// Every split's input files exist before anything is written: a typo in
// --splits does not leave the earlier splits converted and the run failed.
absl::Status CheckInputs(Env* env, const Args& args) {
  for (const std::string& split : args.splits) {
    for (const std::string& path : {ImagesPath(args, split), LabelsPath(args, split)}) {
      if (!env->FileExists(path).ok()) {
        return absl::NotFoundError(absl::StrCat(path, " does not exist (split '", split, "' in ", args.input_dir, ")"));
      }
    }
  }
  return absl::OkStatus();
}

// Shards of `split` that an earlier run wrote with another shard count: a
// glob over DIR/<split>-* would read their examples twice.
absl::Status RemoveOtherShardCounts(Env* env, const Args& args, const std::string& split) {
  auto children = env->GetChildren(args.output_dir);
  if (!children.ok()) return children.status();
  const std::string ours = absl::StrFormat("-of-%05d.tfrecord", args.shards);
  for (const std::string& name : *children) {
    if (name.rfind(split + "-", 0) != 0 || name.find("-of-") == std::string::npos) continue;
    if (!absl::EndsWith(name, ".tfrecord") || absl::EndsWith(name, ours)) continue;
    absl::Status s = env->DeleteFile(JoinPath(args.output_dir, name));
    if (!s.ok()) return s;
    std::fprintf(stderr, "removed %s (an earlier run's shard)\n", JoinPath(args.output_dir, name).c_str());
  }
  return absl::OkStatus();
}

absl::Status ConvertSplit(Env* env, const Args& args, const std::string& split) {
  const std::string images_path = ImagesPath(args, split);
  const std::string labels_path = LabelsPath(args, split);
  auto images = ReadIdxFile(env, images_path);
  if (!images.ok()) return images.status();
  auto labels = ReadIdxFile(env, labels_path);
  if (!labels.ok()) return labels.status();
  if (images->dtype != DT_UINT8 || images->dims.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, ": expected uint8 images [N, H, W]"));
  }
  if (labels->dtype != DT_UINT8 || labels->dims.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(labels_path, ": expected uint8 labels [N]"));
  }
  const int64_t n = images->num_items();
  if (labels->num_items() != n) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, " has ", n, " images but ", labels_path, " has ",
                                                   labels->num_items(), " labels"));
  }
  std::vector<std::unique_ptr<WritableFile>> files;
  std::vector<std::unique_ptr<RecordWriter>> writers;
  std::vector<std::string> finals, temps;
  for (int s = 0; s < args.shards; ++s) {
    finals.push_back(JoinPath(args.output_dir, absl::StrFormat("%s-%05d-of-%05d.tfrecord", split, s, args.shards)));
    temps.push_back(finals.back() + ".tmp");
    auto f = env->NewWritableFile(temps.back());
    if (!f.ok()) return f.status();
    files.push_back(std::move(f).value());
    writers.push_back(std::make_unique<RecordWriter>(files.back().get()));
  }
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  Example example;
  auto* features = example.mutable_features()->mutable_feature();
  std::string bytes;
  for (int64_t i = 0; i < n; ++i) {
    (*features)["image"].mutable_bytes_list()->clear_value();
    (*features)["image"].mutable_bytes_list()->add_value(std::string(images->item(i)));
    (*features)["label"].mutable_int64_list()->clear_value();
    (*features)["label"].mutable_int64_list()->add_value(static_cast<uint8_t>(labels->item(i)[0]));
    example.SerializeToString(&bytes);
    absl::Status st = writers[i % args.shards]->WriteRecord(bytes);
    if (!st.ok()) return st;
    // Progress on a terminal only: into a log, \r lines run together.
    if (progress && ((i + 1) % 5000 == 0 || i + 1 == n)) {
      std::fprintf(stderr, "\r%s: %lld/%lld examples (%d%%)", split.c_str(), static_cast<long long>(i + 1),
                   static_cast<long long>(n), static_cast<int>((i + 1) * 100 / n));
      std::fflush(stderr);
    }
  }
  for (int s = 0; s < args.shards; ++s) {
    absl::Status st = writers[s]->Close();
    if (!st.ok()) return st;
    st = env->RenameFile(temps[s], finals[s]);
    if (!st.ok()) return st;
  }
  std::fprintf(stderr, "%s%s: %lld examples -> %d shards in %s\n", progress ? "\r" : "", split.c_str(),
               static_cast<long long>(n), args.shards, args.output_dir.c_str());
  return RemoveOtherShardCounts(env, args, split);
}

int Main(int argc, char** argv) {
  Args args;
  bool help = false;
  std::string usage_error = ParseArgs(argc, argv, &args, &help);
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!usage_error.empty()) {
    std::fprintf(stderr, "records: %s\n%s", usage_error.c_str(), kUsage);
    return 2;
  }
  Env* env = Env::Default();
  absl::Status s = CheckInputs(env, args);
  if (s.ok()) s = env->CreateDirs(args.output_dir);
  for (size_t i = 0; s.ok() && i < args.splits.size(); ++i) s = ConvertSplit(env, args, args.splits[i]);
  if (!s.ok()) {
    std::fprintf(stderr, "%srecords: error: %s\n", ::isatty(STDERR_FILENO) ? "\n" : "", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
