// LevelDB table building and parsing: see leveldb_table.h and FORMAT.md.
#include "checkpoint/leveldb_table.h"

#include "absl/strings/str_cat.h"
#include "engine/platform/crc32c.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace checkpoint {
namespace {

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutVarint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Reads a varint64 at *pos of `s` (at most 10 bytes); false when it does not end in `s`.
bool GetVarint64(absl::string_view s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift <= 63 && *pos < s.size(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(s[(*pos)++]);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

bool GetVarint32(absl::string_view s, size_t* pos, uint32_t* v) {
  uint64_t w;
  if (!GetVarint64(s, pos, &w) || w > 0xffffffffu) return false;
  *v = static_cast<uint32_t>(w);
  return true;
}

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

void PutHandle(std::string* out, const BlockHandle& h) {
  PutVarint64(out, h.offset);
  PutVarint64(out, h.size);
}

// One block: entries with shared-prefix compression and restart points.
class BlockBuilder {
 public:
  explicit BlockBuilder(int restart_interval) : restart_interval_(restart_interval) { restarts_.push_back(0); }

  void Add(absl::string_view key, absl::string_view value) {
    size_t shared = 0;
    if (counter_ < restart_interval_) {
      while (shared < last_key_.size() && shared < key.size() && last_key_[shared] == key[shared]) ++shared;
    } else {
      restarts_.push_back(static_cast<uint32_t>(buffer_.size()));
      counter_ = 0;
    }
    PutVarint64(&buffer_, shared);
    PutVarint64(&buffer_, key.size() - shared);
    PutVarint64(&buffer_, value.size());
    buffer_.append(key.data() + shared, key.size() - shared);
    buffer_.append(value.data(), value.size());
    last_key_.assign(key.data(), key.size());
    ++counter_;
    empty_ = false;
  }
  bool empty() const { return empty_; }
  size_t EstimatedSize() const { return buffer_.size() + 4 * (restarts_.size() + 1); }
  const std::string& last_key() const { return last_key_; }

  std::string Finish() {
    std::string out = std::move(buffer_);
    for (uint32_t r : restarts_) PutFixed32(&out, r);
    PutFixed32(&out, static_cast<uint32_t>(restarts_.size()));
    return out;
  }

 private:
  int restart_interval_;
  std::string buffer_;
  std::vector<uint32_t> restarts_;
  int counter_ = 0;
  std::string last_key_;
  bool empty_ = true;
};

// Appends a block with its trailer (type 0 = uncompressed, masked CRC32C of
// contents + type byte) to *file; returns its handle.
BlockHandle AppendBlock(const std::string& contents, std::string* file) {
  BlockHandle h{file->size(), contents.size()};
  file->append(contents);
  const char type = 0;
  file->push_back(type);
  uint32_t crc = crc32c::Extend(crc32c::Value(contents), &type, 1);
  PutFixed32(file, crc32c::Mask(crc));
  return h;
}

std::string Where(const std::string& filename, uint64_t offset) {
  return absl::StrCat(filename, " at offset ", offset);
}

// Checks the trailer of the block at `h` and returns its contents.
absl::StatusOr<absl::string_view> ReadBlock(absl::string_view file, size_t limit, const BlockHandle& h,
                                            const std::string& filename, const char* what) {
  if (h.offset > limit || h.size > limit - h.offset || kBlockTrailerBytes > limit - h.offset - h.size) {
    return absl::DataLossError(absl::StrCat("TensorFlow checkpoint index ", filename, ": ", what, " block at offset ",
                                            h.offset, " of ", h.size, " bytes lies outside the file (",
                                            limit, " bytes before the footer)"));
  }
  absl::string_view contents = file.substr(h.offset, h.size);
  const char type = file[h.offset + h.size];
  const uint32_t stored = crc32c::Unmask(GetFixed32(file.data() + h.offset + h.size + 1));
  const uint32_t actual = crc32c::Extend(crc32c::Value(contents), &type, 1);
  if (stored != actual) {
    return absl::DataLossError(absl::StrCat("TensorFlow checkpoint index ", Where(filename, h.offset), ": ", what,
                                            " block CRC32C mismatch (corrupt file)"));
  }
  if (type != 0) {
    return absl::UnimplementedError(absl::StrCat("TensorFlow checkpoint index ", Where(filename, h.offset), ": ", what,
                                                 " block has compression type ", static_cast<int>(type),
                                                 "; only uncompressed (0) tables are supported"));
  }
  return contents;
}

// Decodes every entry of a block, appending them to *out.
absl::Status ParseBlock(absl::string_view block, uint64_t block_offset, const std::string& filename,
                        TableEntries* out) {
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(
        absl::StrCat("TensorFlow checkpoint index ", Where(filename, block_offset), ": malformed block: ", why));
  };
  if (block.size() < 4) return bad("shorter than its restart count");
  const uint64_t num_restarts = GetFixed32(block.data() + block.size() - 4);
  if (num_restarts == 0 || num_restarts > (block.size() - 4) / 4) {
    return bad(absl::StrCat(num_restarts, " restart points do not fit in ", block.size(), " bytes"));
  }
  const size_t end = block.size() - 4 - 4 * num_restarts;
  absl::string_view data = block.substr(0, end);
  std::string key;
  size_t pos = 0;
  while (pos < data.size()) {
    uint32_t shared, non_shared, value_len;
    if (!GetVarint32(data, &pos, &shared) || !GetVarint32(data, &pos, &non_shared) ||
        !GetVarint32(data, &pos, &value_len)) {
      return bad(absl::StrCat("truncated entry header at block offset ", pos));
    }
    if (shared > key.size() || non_shared > data.size() - pos || value_len > data.size() - pos - non_shared) {
      return bad(absl::StrCat("entry at block offset ", pos, " runs past the block"));
    }
    key.resize(shared);
    key.append(data.data() + pos, non_shared);
    pos += non_shared;
    out->emplace_back(key, std::string(data.substr(pos, value_len)));
    pos += value_len;
  }
  return absl::OkStatus();
}

}  // namespace

std::string BuildTable(const TableEntries& entries, const TableOptions& options) {
  std::string file;
  BlockBuilder data(options.restart_interval);
  BlockBuilder index(1);
  auto flush = [&]() {
    if (data.empty()) return;
    const std::string last = data.last_key();
    BlockHandle h = AppendBlock(data.Finish(), &file);
    std::string handle;
    PutHandle(&handle, h);
    index.Add(last, handle);
    data = BlockBuilder(options.restart_interval);
  };
  for (size_t i = 0; i < entries.size(); ++i) {
    CHECK(i == 0 || entries[i - 1].first < entries[i].first) << "BuildTable: keys not strictly ascending";
    data.Add(entries[i].first, entries[i].second);
    if (data.EstimatedSize() >= options.block_bytes) flush();
  }
  flush();
  const BlockHandle meta = AppendBlock(BlockBuilder(options.restart_interval).Finish(), &file);
  const BlockHandle idx = AppendBlock(index.Finish(), &file);
  std::string footer;
  PutHandle(&footer, meta);
  PutHandle(&footer, idx);
  footer.resize(kTableFooterBytes - 8, '\0');
  PutFixed32(&footer, static_cast<uint32_t>(kTableMagic & 0xffffffffu));
  PutFixed32(&footer, static_cast<uint32_t>(kTableMagic >> 32));
  file.append(footer);
  return file;
}

absl::StatusOr<TableEntries> ParseTable(absl::string_view contents, const std::string& filename) {
  if (contents.size() < kTableFooterBytes) {
    return absl::DataLossError(absl::StrCat("TensorFlow checkpoint index ", filename, " is truncated: ",
                                            contents.size(), " bytes, a table needs at least ", kTableFooterBytes));
  }
  const size_t footer_at = contents.size() - kTableFooterBytes;
  absl::string_view footer = contents.substr(footer_at);
  const uint64_t magic = GetFixed32(footer.data() + 40) | (static_cast<uint64_t>(GetFixed32(footer.data() + 44)) << 32);
  if (magic != kTableMagic) {
    return absl::DataLossError(absl::StrCat("TensorFlow checkpoint index ", Where(filename, footer_at + 40),
                                            ": bad table magic number (not a TensorFlow checkpoint index, or "
                                            "truncated)"));
  }
  size_t pos = 0;
  BlockHandle meta, idx;
  absl::string_view handles = footer.substr(0, 40);
  if (!GetVarint64(handles, &pos, &meta.offset) || !GetVarint64(handles, &pos, &meta.size) ||
      !GetVarint64(handles, &pos, &idx.offset) || !GetVarint64(handles, &pos, &idx.size)) {
    return absl::DataLossError(
        absl::StrCat("TensorFlow checkpoint index ", Where(filename, footer_at), ": malformed footer"));
  }
  absl::Status s = ReadBlock(contents, footer_at, meta, filename, "metaindex").status();
  if (!s.ok()) return s;
  absl::StatusOr<absl::string_view> index_block = ReadBlock(contents, footer_at, idx, filename, "index");
  if (!index_block.ok()) return index_block.status();
  TableEntries index;
  s = ParseBlock(*index_block, idx.offset, filename, &index);
  if (!s.ok()) return s;
  TableEntries out;
  for (const auto& [last_key, handle_bytes] : index) {
    BlockHandle h;
    size_t p = 0;
    if (!GetVarint64(handle_bytes, &p, &h.offset) || !GetVarint64(handle_bytes, &p, &h.size) ||
        p != handle_bytes.size()) {
      return absl::DataLossError(absl::StrCat("TensorFlow checkpoint index ", Where(filename, idx.offset),
                                              ": malformed block handle in the index block"));
    }
    absl::StatusOr<absl::string_view> block = ReadBlock(contents, footer_at, h, filename, "data");
    if (!block.ok()) return block.status();
    const size_t first = out.size();
    s = ParseBlock(*block, h.offset, filename, &out);
    if (!s.ok()) return s;
    for (size_t i = first; i < out.size(); ++i) {
      if ((i > 0 && !(out[i - 1].first < out[i].first)) || out[i].first > last_key) {
        return absl::DataLossError(absl::StrCat("TensorFlow checkpoint index ", Where(filename, h.offset),
                                                ": keys out of order in the data block"));
      }
    }
  }
  return out;
}

}  // namespace checkpoint
}  // namespace sluice
