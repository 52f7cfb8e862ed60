// TFRecord, text-line and IDX readers.
#include "inputs/readers.h"

#include "absl/strings/str_cat.h"
#include "inputs/file_order.h"

namespace sluice {

namespace {

// A shuffling reader's open: the records' offsets in `opened` (`file`), their
// permutation for work unit `work`, and the saved index checked against them.
absl::Status OpenInPermutation(RandomAccessFile* opened, const std::string& file, const RecordFormat& format,
                               uint64_t seed, int64_t work, int64_t position, std::vector<uint64_t>* offsets,
                               std::vector<int64_t>* order) {
  auto found = RecordOffsets(opened, format);
  if (!found.ok()) return found.status();
  *offsets = std::move(found).value();
  const int64_t n = static_cast<int64_t>(offsets->size());
  if (position > n) {
    return absl::DataLossError(
        absl::StrCat(file, ": the saved position ", position, " is past its ", n, " records (the file changed?)"));
  }
  *order = SeededPermutation(seed, work, n);
  return absl::OkStatus();
}

absl::Status RecordGone(const std::string& file, uint64_t offset) {
  return absl::DataLossError(
      absl::StrCat(file, ": no record at offset ", offset, " any more (the file changed while it was read)"));
}

}  // namespace

absl::Status TFRecordReader::OpenLocked(const std::string& file, int64_t position) {
  auto f = env()->NewRandomAccessFile(file);
  if (!f.ok()) return f.status();
  file_ = std::move(f).value();
  reader_ = std::make_unique<RecordReader>(file_.get(), options_);
  offset_ = static_cast<uint64_t>(position);
  if (shuffle_seed_ == 0) return absl::OkStatus();
  offset_ = 0;
  index_ = position;
  return OpenInPermutation(file_.get(), file, RecordFormat{RecordFormat::kTfRecord}, shuffle_seed_,
                           work_started_locked(), position, &offsets_, &order_);
}

absl::Status TFRecordReader::ReadLocked(std::string* key, std::string* value, bool* produced, bool* at_end) {
  if (shuffle_seed_ != 0) {
    if (index_ >= static_cast<int64_t>(order_.size())) {
      *at_end = true;
      return absl::OkStatus();
    }
    uint64_t offset = offsets_[order_[index_]];
    const uint64_t start = offset;
    absl::Status s = reader_->ReadRecord(&offset, value);
    if (absl::IsOutOfRange(s)) return RecordGone(current_work(), start);
    if (!s.ok()) return s;
    ++index_;
    *key = absl::StrCat(current_work(), ":", start);
    *produced = true;
    return absl::OkStatus();
  }
  const uint64_t start = offset_;
  absl::Status s = reader_->ReadRecord(&offset_, value);
  if (absl::IsOutOfRange(s)) {
    *at_end = true;
    return absl::OkStatus();
  }
  if (!s.ok()) return s;
  *key = absl::StrCat(current_work(), ":", start);
  *produced = true;
  return absl::OkStatus();
}

void TFRecordReader::CloseLocked() {
  reader_.reset();
  file_.reset();
  offset_ = 0;
  offsets_.clear();
  order_.clear();
  index_ = 0;
}

absl::Status TextLineReader::OpenLocked(const std::string& file, int64_t position) {
  auto f = env()->NewRandomAccessFile(file);
  if (!f.ok()) return f.status();
  file_ = std::move(f).value();
  reader_ = std::make_unique<LineReader>(file_.get());
  offset_ = 0;
  line_ = 0;
  if (shuffle_seed_ != 0) {
    index_ = position;
    RecordFormat format;
    format.kind = RecordFormat::kLines;
    format.skip_header_lines = skip_header_lines_;
    return OpenInPermutation(file_.get(), file, format, shuffle_seed_, work_started_locked(), position, &offsets_,
                             &order_);
  }
  std::string ignored;
  // Skip the header, or (on restore) count the lines before `position`.
  while (line_ < skip_header_lines_ || offset_ < static_cast<uint64_t>(position)) {
    absl::Status s = reader_->ReadLine(&offset_, &ignored);
    if (absl::IsOutOfRange(s)) break;
    if (!s.ok()) return s;
    ++line_;
  }
  if (position > 0 && offset_ != static_cast<uint64_t>(position)) {
    return absl::DataLossError(
        absl::StrCat(file, ": no line starts at the saved position ", position, " (the file changed?)"));
  }
  return absl::OkStatus();
}

absl::Status TextLineReader::ReadLocked(std::string* key, std::string* value, bool* produced, bool* at_end) {
  if (shuffle_seed_ != 0) {
    if (index_ >= static_cast<int64_t>(order_.size())) {
      *at_end = true;
      return absl::OkStatus();
    }
    const int64_t record = order_[index_];
    uint64_t offset = offsets_[record];
    absl::Status s = reader_->ReadLine(&offset, value);
    if (absl::IsOutOfRange(s)) return RecordGone(current_work(), offsets_[record]);
    if (!s.ok()) return s;
    ++index_;
    *key = absl::StrCat(current_work(), ":", skip_header_lines_ + record + 1);  // 1-based, the header counted
    *produced = true;
    return absl::OkStatus();
  }
  absl::Status s = reader_->ReadLine(&offset_, value);
  if (absl::IsOutOfRange(s)) {
    *at_end = true;
    return absl::OkStatus();
  }
  if (!s.ok()) return s;
  ++line_;
  *key = absl::StrCat(current_work(), ":", line_);
  *produced = true;
  return absl::OkStatus();
}

void TextLineReader::CloseLocked() {
  reader_.reset();
  file_.reset();
  offsets_.clear();
  order_.clear();
  index_ = 0;
}

absl::Status IdxRecordReader::OpenLocked(const std::string& file, int64_t position) {
  auto read = cache_->Read(env(), file);
  if (!read.ok()) return read.status();
  std::shared_ptr<const IdxFile> idx = std::move(read).value();
  last_ = idx;
  if (position > idx->num_items()) {
    return absl::DataLossError(absl::StrCat(file, ": the saved position ", position, " is past its ",
                                            idx->num_items(), " items (the file changed?)"));
  }
  idx_ = std::move(idx);
  index_ = position;
  order_.clear();
  if (shuffle_seed_ != 0) {
    order_ = SeededPermutation(shuffle_seed_, work_started_locked(), idx_->num_items());
  }
  return absl::OkStatus();
}

absl::Status IdxRecordReader::ReadLocked(std::string* key, std::string* value, bool* produced, bool* at_end) {
  while (num_shards_ > 1 && index_ < idx_->num_items() && index_ % num_shards_ != shard_index_) ++index_;
  if (index_ >= idx_->num_items()) {
    *at_end = true;
    return absl::OkStatus();
  }
  const int64_t item = order_.empty() ? index_ : order_[index_];
  *value = std::string(idx_->item(item));
  *key = absl::StrCat(current_work(), ":", item);
  ++index_;
  *produced = true;
  return absl::OkStatus();
}

absl::Status TextWindowReader::OpenLocked(const std::string& file, int64_t position) {
  // The files' sizes tell whether the ids read last time still hold.
  std::vector<uint64_t> sizes;
  for (const std::string& f : corpus_.files) {
    auto size = env()->GetFileSize(f);
    if (!size.ok()) return size.status();
    sizes.push_back(*size);
  }
  if (!loaded_ || sizes != sizes_) {
    loaded_ = false;
    auto stream = text::ReadTokenStream(env(), corpus_, split_, vocabulary_);
    if (!stream.ok()) return stream.status();
    ids_ = std::move(stream->ids);
    sizes_ = std::move(sizes);
    windows_ = text::NumWindows(static_cast<int64_t>(ids_.size()), seq_len_);
    loaded_ = true;
  }
  if (position < 0 || position > windows_) {
    return absl::DataLossError(absl::StrCat(file, ": the saved position ", position, " is past the corpus's ",
                                            windows_, " windows (the files changed?)"));
  }
  index_ = position;
  order_.clear();
  if (shuffle_seed_ != 0) order_ = SeededPermutation(shuffle_seed_, work_started_locked(), windows_);
  return absl::OkStatus();
}

absl::Status TextWindowReader::ReadLocked(std::string* key, std::string* value, bool* produced, bool* at_end) {
  while (num_shards_ > 1 && index_ < windows_ && index_ % num_shards_ != shard_index_) ++index_;
  if (index_ >= windows_) {
    *at_end = true;
    return absl::OkStatus();
  }
  const int64_t window = order_.empty() ? index_ : order_[index_];
  const int32_t* ids = ids_.data() + window * seq_len_;
  value->resize(static_cast<size_t>(seq_len_ + 1) * 8);
  char* out = value->data();
  for (int64_t i = 0; i <= seq_len_; ++i) {
    const uint64_t id = static_cast<uint64_t>(static_cast<int64_t>(ids[i]));
    for (int b = 0; b < 8; ++b) *out++ = static_cast<char>((id >> (8 * b)) & 0xff);
  }
  *key = absl::StrCat(current_work(), ":", window);
  ++index_;
  *produced = true;
  return absl::OkStatus();
}

}  // namespace sluice
