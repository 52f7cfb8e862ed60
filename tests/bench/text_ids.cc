// text_ids: writes the word ids Sluice's text input reads for an experiment,
// so a peer (tests/bench/lm_vs_torch) trains on exactly the same data:
//
//   text_ids CONFIG OUT_DIR
//
// From CONFIG's input.train.text (the vocabulary, built as `train` builds
// it) and input.eval.text: OUT_DIR/vocab.txt (one word per line, id = line -
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

namespace sluice {
namespace {

absl::StatusOr<text::Corpus> CorpusOf(const config::Input::Text& t) {
  auto files = text::ExpandFiles(Env::Default(), {t.files().begin(), t.files().end()},
                                 {t.exclude().begin(), t.exclude().end()});
  if (!files.ok()) return files.status();
  text::Corpus corpus;
  corpus.files = *files;
  corpus.format = t.format() == config::Input::Text::FORTUNES ? text::Format::kFortunes : text::Format::kLines;
  corpus.lowercase = !t.keep_case();
  return corpus;
}

text::Split SplitOf(const config::Input::Text& t, bool training) {
  switch (t.split()) {
    case config::Input::Text::ALL: return text::Split::kAll;
    case config::Input::Text::TEST: return text::Split::kTest;
    case config::Input::Text::TRAIN: return text::Split::kTrain;
    default: return training ? text::Split::kTrain : text::Split::kTest;
  }
}

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
  const config::Input::Text& train = e.input().train().text();
  auto corpus = CorpusOf(train);
  if (!corpus.ok()) return corpus.status();
  Env* env = Env::Default();
  const text::Split train_split = SplitOf(train, true);
  auto vocabulary = !train.vocabulary().file().empty()
                        ? text::Vocabulary::ReadFile(env, train.vocabulary().file())
                        : text::BuildVocabulary(env, *corpus, train_split == text::Split::kAll ? text::Split::kAll
                                                                                               : text::Split::kTrain,
                                                train.vocabulary().max_size(),
                                                std::max<int64_t>(1, train.vocabulary().min_count()));
  if (!vocabulary.ok()) return vocabulary.status();
  absl::Status s = env->CreateDirs(out_dir);
  if (!s.ok()) return s;
  std::string words;
  for (const std::string& w : vocabulary->words()) absl::StrAppend(&words, w, "\n");
  s = WriteStringToFile(env, JoinPath(out_dir, "vocab.txt"), words);
  if (!s.ok()) return s;
  struct Part {
    const config::Input::Text* text;
    bool training;
    const char* file;
  };
  for (const Part& part : {Part{&train, true, "train.ids"}, Part{&e.input().eval().text(), false, "test.ids"}}) {
    auto c = CorpusOf(*part.text);
    if (!c.ok()) return c.status();
    auto stream = text::ReadTokenStream(env, *c, SplitOf(*part.text, part.training), *vocabulary);
    if (!stream.ok()) return stream.status();
    s = WriteIds(JoinPath(out_dir, part.file), stream->ids);
    if (!s.ok()) return s;
    std::printf("%s: %zu ids (%lld sentences, %lld <unk>)\n", part.file, stream->ids.size(),
                static_cast<long long>(stream->sentences), static_cast<long long>(stream->unknown));
  }
  std::printf("vocab.txt: %lld words\n", static_cast<long long>(vocabulary->size()));
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
