// The reader formats over ReaderBase:
//  TFRecordReader   one record per value; key "file:offset" (the record's
//                   byte offset); corrupt or truncated records are DataLoss.
//  TextLineReader   one line per value (without "\n"); key "file:line" (1-based);
//                   skips `skip_header_lines` lines of each file.
//  IdxRecordReader  (Sluice) one IDX item per value, e.g. one 28x28 image as
//                   784 bytes; key "file:index"; gzip or plain files.
//  TextWindowReader (Sluice) one window of seq_len + 1 token ids of a text
//                   corpus per value (int64 little-endian); key "work:window".
// Thread safety: as ReaderBase.
#ifndef SLUICE_INPUTS_READERS_H_
#define SLUICE_INPUTS_READERS_H_

#include <memory>
#include <optional>

#include "inputs/idx.h"
#include "inputs/idx_cache.h"
#include "inputs/line_reader.h"
#include "inputs/reader_base.h"
#include "inputs/text.h"
#include "engine/platform/record_reader.h"

namespace sluice {

// With a nonzero `shuffle_seed`, TFRecordReader and TextLineReader read the
// records of each file in a seeded permutation, a new one per work unit, as
// IdxRecordReader does (below): Open scans the file for its records' offsets
// (8 bytes a record), and the position is then the index in the permutation,
// not a byte offset.
class TFRecordReader : public ReaderBase {
 public:
  TFRecordReader(std::string name, Env* env, RecordReaderOptions options = {}, uint64_t shuffle_seed = 0)
      : ReaderBase("TFRecordReader", std::move(name), env), options_(options), shuffle_seed_(shuffle_seed) {}

 protected:
  absl::Status OpenLocked(const std::string& file, int64_t position) override;
  absl::Status ReadLocked(std::string* key, std::string* value, bool* produced, bool* at_end) override;
  void CloseLocked() override;
  int64_t PositionLocked() const override { return shuffle_seed_ != 0 ? index_ : static_cast<int64_t>(offset_); }

 private:
  RecordReaderOptions options_;
  const uint64_t shuffle_seed_;
  std::unique_ptr<RandomAccessFile> file_;
  std::unique_ptr<RecordReader> reader_;
  uint64_t offset_ = 0;
  // With shuffle_seed: the records' offsets, their order, and the next index in it.
  std::vector<uint64_t> offsets_;
  std::vector<int64_t> order_;
  int64_t index_ = 0;
};

class TextLineReader : public ReaderBase {
 public:
  TextLineReader(std::string name, Env* env, int64_t skip_header_lines, uint64_t shuffle_seed = 0)
      : ReaderBase("TextLineReader", std::move(name), env),
        skip_header_lines_(skip_header_lines),
        shuffle_seed_(shuffle_seed) {}

 protected:
  absl::Status OpenLocked(const std::string& file, int64_t position) override;
  absl::Status ReadLocked(std::string* key, std::string* value, bool* produced, bool* at_end) override;
  void CloseLocked() override;
  // Byte offset (the line number is recomputed on restore by counting
  // lines); with shuffle_seed, the index in the permutation.
  int64_t PositionLocked() const override { return shuffle_seed_ != 0 ? index_ : static_cast<int64_t>(offset_); }

 private:
  int64_t skip_header_lines_;
  const uint64_t shuffle_seed_;
  std::unique_ptr<RandomAccessFile> file_;
  std::unique_ptr<LineReader> reader_;
  uint64_t offset_ = 0;
  int64_t line_ = 0;
  // With shuffle_seed: as TFRecordReader's.
  std::vector<uint64_t> offsets_;
  std::vector<int64_t> order_;
  int64_t index_ = 0;
};

// With a nonzero `shuffle_seed` the items of each work unit come in a seeded
// permutation, a new one per work unit: unit k (k = work units started,
// counting this one) uses the permutation keyed by (shuffle_seed, k). The
// order is thus a function of the saved state alone, so a restored reader
// continues exactly where a saved one would have (deterministic training).
// A gzip file opened again (the next epoch, a restore) reuses the items
// inflated last time when its size and gzip trailer (CRC-32 and length of
// the data) are unchanged: inflating Fashion-MNIST's training images took a
// third of the input pipeline's time at batch 1024. Files are read through
// an IdxFileCache (the process's by default), so other readers of the file
// and the pipeline's build share one inflation. Plain files are re-read.
class IdxRecordReader : public ReaderBase {
 public:
  // With num_shards > 1, reads only the items at positions p of each
  // epoch's order with p % num_shards == shard_index (one worker's share).
  // `cache` null: IdxFileCache::Default().
  IdxRecordReader(std::string name, Env* env, uint64_t shuffle_seed = 0, int64_t num_shards = 1,
                  int64_t shard_index = 0, IdxFileCache* cache = nullptr)
      : ReaderBase("IdxRecordReader", std::move(name), env),
        shuffle_seed_(shuffle_seed),
        num_shards_(num_shards),
        shard_index_(shard_index),
        cache_(cache != nullptr ? cache : IdxFileCache::Default()) {}

 protected:
  absl::Status OpenLocked(const std::string& file, int64_t position) override;
  absl::Status ReadLocked(std::string* key, std::string* value, bool* produced, bool* at_end) override;
  void CloseLocked() override { idx_.reset(); }
  int64_t PositionLocked() const override { return index_; }

 private:
  std::shared_ptr<const IdxFile> idx_;  // the open file
  // The last file opened, held across Close so that the cache finds it at the
  // next Open even when it does not keep it (a file over its budget).
  std::shared_ptr<const IdxFile> last_;
  int64_t index_ = 0;
  const uint64_t shuffle_seed_;
  const int64_t num_shards_;
  const int64_t shard_index_;
  IdxFileCache* const cache_;
  // Empty: file order. One entry per item: ParseIdx admits no more items
  // than the file has data bytes (no 2^32 empty items from a header alone).
  std::vector<int64_t> order_;
};

// A text corpus as windows of token ids (inputs/text.h): each work unit taken
// from the queue is one pass over the whole corpus (its name only labels the
// keys), so a file-name queue holding one name per epoch gives epochs. On
// Open the reader tokenizes its split of the corpus files into ids with the
// vocabulary (kept for later opens while the files' sizes are unchanged);
// each read yields window w (text.h's NumWindows) as seq_len + 1 int64
// little-endian ids. shuffle_seed, num_shards and shard_index work as for
// IdxRecordReader, over windows. The position is the window index.
class TextWindowReader : public ReaderBase {
 public:
  // REQUIRES: seq_len >= 1, num_shards >= 1, 0 <= shard_index < num_shards.
  TextWindowReader(std::string name, Env* env, text::Corpus corpus, text::Split split, text::Vocabulary vocabulary,
                   int64_t seq_len, uint64_t shuffle_seed = 0, int64_t num_shards = 1, int64_t shard_index = 0)
      : ReaderBase("TextWindowReader", std::move(name), env),
        corpus_(std::move(corpus)),
        split_(split),
        vocabulary_(std::move(vocabulary)),
        seq_len_(seq_len),
        shuffle_seed_(shuffle_seed),
        num_shards_(num_shards),
        shard_index_(shard_index) {}

 protected:
  absl::Status OpenLocked(const std::string& file, int64_t position) override;
  absl::Status ReadLocked(std::string* key, std::string* value, bool* produced, bool* at_end) override;
  void CloseLocked() override {}
  int64_t PositionLocked() const override { return index_; }

 private:
  const text::Corpus corpus_;
  const text::Split split_;
  const text::Vocabulary vocabulary_;
  const int64_t seq_len_;
  const uint64_t shuffle_seed_;
  const int64_t num_shards_;
  const int64_t shard_index_;
  std::vector<int32_t> ids_;         // the split's token ids
  std::vector<uint64_t> sizes_;      // the files' sizes when ids_ was read
  bool loaded_ = false;
  int64_t windows_ = 0;
  int64_t index_ = 0;
  std::vector<int64_t> order_;       // empty: window order
};

}  // namespace sluice

#endif  // SLUICE_INPUTS_READERS_H_
