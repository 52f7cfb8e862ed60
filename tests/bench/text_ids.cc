// text_ids: writes the word ids Sluice's text input reads for an experiment,
// so a peer (tests/bench/lm_vs_torch) trains on exactly the same data:
//
//   text_ids CONFIG OUT_DIR
//
// From CONFIG's input.train.text and input.eval.text, resolved as `train`
// resolves them (models::ResolveTextSource): OUT_DIR/vocab.txt (one word per line, id = line -
// 1), OUT_DIR/train.ids and OUT_DIR/test.ids (the splits' id streams, <eos>
// after each sentence, int32 little-endian). Prints the counts. Exit codes: 0
// done, 1 error (the message names the file), 2 usage.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "configs/load.h"
#include "engine/platform/env.h"
#include "inputs/text.h"
#include "models/input_pipeline.h"

namespace sluice {
namespace {

absl::Status WriteIds(const std::string& path, const std::vector<int32_t>& ids) {
  std::string bytes(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int32_t));
  return WriteStringToFile(Env::Default(), path, bytes);
}

absl::Status Export(const std::string& config_path, const std::string& out_dir) {
  auto loaded = config::LoadExperimentFile(config_path);
  if (!loaded.ok()) return loaded.status();
  const config::Experiment& e = (*loaded)->experiment;
  if (!e.input().train().has_text() || !e.input().eval().has_text()) {
    return absl::InvalidArgumentError(absl::StrCat(config_path, ": input.train and input.eval must both be text"));
  }
  auto train = models::ResolveTextSource(e.input().train().text(), /*training=*/true);
  if (!train.ok()) return train.status();
  auto test = models::ResolveTextSource(e.input().eval().text(), /*training=*/false, train->vocabulary.words());
  if (!test.ok()) return test.status();
  Env* env = Env::Default();
  absl::Status s = env->CreateDirs(out_dir);
  if (!s.ok()) return s;
  std::string words;
  for (const std::string& w : train->vocabulary.words()) absl::StrAppend(&words, w, "\n");
  s = WriteStringToFile(env, JoinPath(out_dir, "vocab.txt"), words);
  if (!s.ok()) return s;
  for (const auto& [source, file] : {std::pair<const models::TextSource*, const char*>{&*train, "train.ids"},
                                     {&*test, "test.ids"}}) {
    auto stream = text::ReadTokenStream(env, source->corpus, source->split, source->vocabulary);
    if (!stream.ok()) return stream.status();
    s = WriteIds(JoinPath(out_dir, file), stream->ids);
    if (!s.ok()) return s;
    std::printf("%s: %zu ids (%lld sentences, %lld <unk>)\n", file, stream->ids.size(),
                static_cast<long long>(stream->sentences), static_cast<long long>(stream->unknown));
  }
  std::printf("vocab.txt: %lld words\n", static_cast<long long>(train->vocabulary.size()));
  return absl::OkStatus();
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: text_ids CONFIG OUT_DIR\n");
    return 2;
  }
  absl::Status s = sluice::Export(argv[1], argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "text_ids: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
