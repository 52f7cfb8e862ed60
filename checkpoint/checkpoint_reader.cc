// Checkpoint reader: see checkpoint_reader.h and FORMAT.md.
#include "checkpoint/checkpoint_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "checkpoint/manifest_rules.h"
#include "engine/platform/crc32c.h"
#include "checkpoint/rocksdb_util.h"
#include "checkpoint/store_format.h"
#include "engine/platform/status_macros.h"
#include "rocksdb/db.h"

namespace sluice {
namespace checkpoint {
namespace {

std::string Hex(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

bool SameShape(const TensorShapeProto& a, const TensorShapeProto& b) {
  return a.SerializeAsString() == b.SerializeAsString();
}

// FILES is a few lines per shard file: this is far beyond any real one.
constexpr uint64_t kMaxFilesBytes = 64 << 20;

// Whether `rel` (a FILES path) names something below the checkpoint
// directory: relative, no empty, "." or ".." components.
bool IsPlainRelativePath(absl::string_view rel) {
  if (rel.empty() || rel.front() == '/') return false;
  for (absl::string_view part : absl::StrSplit(rel, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

// The regular files of a checkpoint directory (relative path -> size), by
// lstat: a checkpoint holds only directories (the shard stores, one level
// down) and regular files. Anything else (a symlink that could lead out of
// the checkpoint, a FIFO or device that would block or never end a read) is
// DataLoss naming it, found before RocksDB or anyone else opens a file.
absl::StatusOr<std::map<std::string, uint64_t>> ListCheckpointFiles(Env* env, const std::string& dir) {
  std::map<std::string, uint64_t> files;
  std::vector<std::string> pending = {""};  // directories to list, relative
  while (!pending.empty()) {
    const std::string rel_dir = pending.back();
    pending.pop_back();
    const std::string abs_dir = rel_dir.empty() ? dir : JoinPath(dir, rel_dir);
    auto children = env->GetChildren(abs_dir);
    if (!children.ok()) return absl::DataLossError(absl::StrCat("checkpoint ", dir, ": ", children.status().message()));
    for (const std::string& c : *children) {
      const std::string rel = rel_dir.empty() ? c : JoinPath(rel_dir, c);
      const std::string path = JoinPath(dir, rel);
      auto type = env->GetFileType(path);
      if (!type.ok()) return absl::DataLossError(absl::StrCat("checkpoint ", dir, ": ", type.status().message()));
      switch (*type) {
        case FileType::kRegular: {
          auto size = env->GetFileSize(path);
          if (!size.ok()) return absl::DataLossError(absl::StrCat("checkpoint ", dir, ": ", size.status().message()));
          files[rel] = *size;
          break;
        }
        case FileType::kDirectory:
          if (!rel_dir.empty()) {
            return absl::DataLossError(absl::StrCat("checkpoint ", dir, ": unexpected directory ", path,
                                                    " (shard stores hold only files)"));
          }
          pending.push_back(rel);
          break;
        case FileType::kSymlink:
          return absl::DataLossError(absl::StrCat("checkpoint ", dir, ": ", path,
                                                  " is a symlink (a checkpoint holds only regular files and directories)"));
        case FileType::kFifo:
        case FileType::kOther:
          return absl::DataLossError(absl::StrCat("checkpoint ", dir, ": ", path,
                                                  " is not a regular file (FIFO, socket or device)"));
      }
    }
  }
  return files;
}

// A shard stores its values uncompressed (FORMAT.md), so the bytes its
// entries claim cannot exceed its SST files: this bounds every allocation a
// read makes by what is actually on disk.
absl::Status CheckShardBytes(rocksdb::DB* db, const CheckpointManifest& m, int shard, const std::string& store) {
  uint64_t claimed = 0;
  for (const TensorEntry& e : m.tensors()) {
    if (e.shard() != shard) continue;
    if (e.num_bytes() > std::numeric_limits<uint64_t>::max() - claimed) {
      claimed = std::numeric_limits<uint64_t>::max();
      break;
    }
    claimed += e.num_bytes();
  }
  uint64_t on_disk = 0;
  if (!db->GetIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &on_disk)) {
    return absl::DataLossError(absl::StrCat("store ", store, ": cannot read the size of its SST files"));
  }
  if (claimed > on_disk) {
    return absl::DataLossError(absl::StrCat("store ", store, ": its tensors claim ", claimed,
                                            " bytes but its SST files hold only ", on_disk));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CheckpointManifest> ReadShardManifest(rocksdb::DB* db, const std::string& store_path) {
  std::string value;
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  rocksdb::Status s = db->Get(ro, kManifestKey, &value);
  if (!s.ok()) return absl::DataLossError(absl::StrCat("store ", store_path, ": manifest: ", s.ToString()));
  CheckpointManifest m;
  if (!m.ParseFromString(value)) {
    return absl::DataLossError(absl::StrCat("store ", store_path, ": manifest does not parse"));
  }
  if (m.format() != kFormatName) {
    return absl::DataLossError(absl::StrCat("store ", store_path, ": unknown format '", m.format(), "'"));
  }
  if (m.num_shards() < 1 || m.num_shards() > 100000 || m.shard_index() < 0 || m.shard_index() >= m.num_shards()) {
    return absl::DataLossError(absl::StrCat("store ", store_path, ": bad shard fields in the manifest"));
  }
  if (m.chunk_bytes() == 0) return absl::DataLossError(absl::StrCat("store ", store_path, ": chunk_bytes is 0"));
  absl::Status c = CheckManifestEntries(m);
  if (!c.ok()) return absl::DataLossError(absl::StrCat("store ", store_path, ": ", c.message()));
  return m;
}

CheckpointReader::CheckpointReader(std::string dir, Env* env) : dir_(std::move(dir)), env_(env) {}

CheckpointReader::~CheckpointReader() {
  absl::MutexLock lock(&mu_);
  for (auto& db : shards_) {
    if (db) db->Close().PermitUncheckedError();
  }
}

std::string CheckpointReader::ShardPath(int shard) const {
  return JoinPath(dir_, ShardDirName(shard, manifest_.num_shards()));
}

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& dir, Env* env,
                                                                         int preferred_shard) {
  if (!env->IsDirectory(dir)) return absl::NotFoundError(absl::StrCat("checkpoint ", dir, " does not exist"));
  // Nothing is opened before every entry is known to be a plain file or directory.
  SLUICE_RETURN_IF_ERROR(ListCheckpointFiles(env, dir).status());
  std::unique_ptr<CheckpointReader> r(new CheckpointReader(dir, env));
  // Shard stores are named shard-<i>-of-<n>: find them.
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> children, env->GetChildren(dir));
  std::vector<std::string> stores;
  for (const std::string& c : children) {
    if (absl::StartsWith(c, "shard-") && !absl::EndsWith(c, ".sst") && env->IsDirectory(JoinPath(dir, c))) {
      stores.push_back(c);
    }
  }
  if (stores.empty()) return absl::DataLossError(absl::StrCat("checkpoint ", dir, ": no shard stores"));
  if (preferred_shard >= 0 && preferred_shard < static_cast<int>(stores.size())) {
    std::rotate(stores.begin(), stores.begin() + preferred_shard, stores.end());
  }
  absl::Status first_error;
  for (const std::string& name : stores) {
    const std::string path = JoinPath(dir, name);
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::OpenForReadOnly(StoreOptions(/*write=*/false), path, &raw);
    if (!s.ok()) {
      if (first_error.ok()) first_error = absl::DataLossError(absl::StrCat("store ", path, ": ", s.ToString()));
      continue;
    }
    std::unique_ptr<rocksdb::DB> db(raw);
    auto m = ReadShardManifest(db.get(), path);
    if (m.ok()) {
      absl::Status bytes = CheckShardBytes(db.get(), *m, m->shard_index(), path);
      if (!bytes.ok()) m = bytes;
    }
    if (!m.ok()) {
      if (first_error.ok()) first_error = m.status();
      db->Close().PermitUncheckedError();
      continue;
    }
    if (name != ShardDirName(m->shard_index(), m->num_shards())) {
      if (first_error.ok()) {
        first_error = absl::DataLossError(absl::StrCat("store ", path, ": its manifest says it is ",
                                                       ShardDirName(m->shard_index(), m->num_shards())));
      }
      db->Close().PermitUncheckedError();
      continue;
    }
    r->manifest_ = *std::move(m);
    absl::MutexLock lock(&r->mu_);
    r->shards_.resize(r->manifest_.num_shards());
    r->shards_[r->manifest_.shard_index()] = std::move(db);
    return r;
  }
  return absl::DataLossError(absl::StrCat("checkpoint ", dir, ": ", first_error.message()));
}

absl::StatusOr<rocksdb::DB*> CheckpointReader::Shard(int shard) {
  absl::MutexLock lock(&mu_);
  if (shard < 0 || shard >= static_cast<int>(shards_.size())) {
    return absl::DataLossError(absl::StrCat("checkpoint ", dir_, ": no shard ", shard));
  }
  if (shards_[shard]) return shards_[shard].get();
  const std::string path = ShardPath(shard);
  if (!env_->IsDirectory(path)) return absl::DataLossError(absl::StrCat("store ", path, " is missing"));
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(StoreOptions(/*write=*/false), path, &raw);
  if (!s.ok()) return absl::DataLossError(absl::StrCat("store ", path, ": ", s.ToString()));
  std::unique_ptr<rocksdb::DB> db(raw);
  absl::Status bytes = CheckShardBytes(db.get(), manifest_, shard, path);
  if (!bytes.ok()) {
    db->Close().PermitUncheckedError();
    return absl::DataLossError(absl::StrCat("checkpoint ", dir_, ": ", bytes.message()));
  }
  shards_[shard] = std::move(db);
  return raw;
}

const TensorEntry* CheckpointReader::FindEntry(const std::string& key) const {
  auto it = std::lower_bound(manifest_.tensors().begin(), manifest_.tensors().end(), key,
                             [](const TensorEntry& e, const std::string& k) { return e.key() < k; });
  if (it == manifest_.tensors().end() || it->key() != key) return nullptr;
  return &*it;
}

absl::StatusOr<Tensor> CheckpointReader::ReadTensor(const std::string& key, bool check) {
  const TensorEntry* entry = FindEntry(key);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", dir_, " has no tensor '", key, "'"));
  }
  SLUICE_ASSIGN_OR_RETURN(rocksdb::DB* db, Shard(entry->shard()));
  const std::string store = ShardPath(entry->shard());
  auto loss = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat("checkpoint ", dir_, ": store ", store, ": tensor '", key, "': ", what));
  };
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  ro.fill_cache = false;
  std::string header_bytes;
  rocksdb::Status s = db->Get(ro, HeaderKey(key), &header_bytes);
  if (!s.ok()) return loss("header: " + s.ToString());
  TensorEntry header;
  if (!header.ParseFromString(header_bytes)) return loss("header does not parse");
  if (header.dtype() != entry->dtype() || !SameShape(header.shape(), entry->shape()) ||
      header.num_bytes() != entry->num_bytes() || header.num_chunks() != entry->num_chunks() ||
      header.crc32c() != entry->crc32c() || header.shard() != entry->shard()) {
    return loss("header disagrees with the manifest");
  }
  if (header.chunk_crc32c_size() != static_cast<int>(header.num_chunks())) return loss("chunk CRC list has the wrong length");
  auto shape = TensorShape::FromProto(entry->shape());
  if (!shape.ok()) return loss(std::string(shape.status().message()));
  auto out = Tensor::Allocate(CpuAllocator(), entry->dtype(), *shape);
  if (!out.ok()) return loss(std::string(out.status().message()));
  Tensor t = *std::move(out);
  // Chunk bytes are covered by our own chunk CRCs: skip RocksDB's second
  // pass over them (VerifyAll still checks every block checksum).
  rocksdb::ReadOptions chunk_ro = ro;
  chunk_ro.verify_checksums = false;
  std::string string_bytes;
  const bool is_string = entry->dtype() == DT_STRING;
  // Strings grow chunk by chunk: a corrupt num_bytes must not become a huge allocation.
  if (is_string) string_bytes.reserve(std::min<uint64_t>(entry->num_bytes(), 64 << 20));
  char* dst = is_string ? nullptr : static_cast<char*>(t.raw_data());
  const uint64_t chunk_bytes = manifest_.chunk_bytes();
  uint32_t whole = 0;
  rocksdb::PinnableSlice value;
  for (uint64_t c = 0; c < entry->num_chunks(); ++c) {
    const uint64_t off = c * chunk_bytes;
    const uint64_t len = std::min(chunk_bytes, entry->num_bytes() - off);
    value.Reset();
    s = db->Get(chunk_ro, db->DefaultColumnFamily(), ChunkKey(key, c), &value);
    if (!s.ok()) return loss(absl::StrCat("chunk ", c, ": ", s.ToString()));
    if (value.size() != len) return loss(absl::StrCat("chunk ", c, " has ", value.size(), " bytes, expected ", len));
    // One pass over the chunk checks it and copies it out (a bad chunk fails
    // the read: the tensor is dropped, so what was copied does not matter).
    char* to;
    if (is_string) {
      string_bytes.resize(string_bytes.size() + len);
      to = &string_bytes[string_bytes.size() - len];
    } else {
      to = dst + off;
    }
    const uint32_t crc = crc32c::ExtendAndCopy(0, value.data(), len, to);
    if (crc != header.chunk_crc32c(c)) {
      return loss(absl::StrCat("chunk ", c, " CRC mismatch (stored ", Hex(header.chunk_crc32c(c)), ", computed ",
                               Hex(crc), ")"));
    }
    whole = c == 0 ? crc : crc32c::Combine(whole, crc, len);
  }
  if (check && whole != entry->crc32c()) {
    return loss(absl::StrCat("CRC mismatch (stored ", Hex(entry->crc32c()), ", computed ", Hex(whole), ")"));
  }
  if (is_string) {
    absl::Status d = DecodeStringTensor(string_bytes, &t);
    if (!d.ok()) return loss(std::string(d.message()));
  }
  return t;
}

absl::StatusOr<Tensor> CheckpointReader::ReadSlice(const std::string& full_name, const TensorShape& full_shape,
                                                   const TensorSlice& slice, bool check) {
  if (static_cast<int>(slice.start.size()) != full_shape.dims() || slice.length.size() != slice.start.size()) {
    return absl::InvalidArgumentError(absl::StrCat("slice '", slice.ToString(), "' of '", full_name,
                                                   "' does not have the rank of ", full_shape.DebugString()));
  }
  std::vector<const TensorEntry*> parts;
  for (const TensorEntry& e : manifest_.tensors()) {
    if (e.full_name() == full_name) parts.push_back(&e);
  }
  if (parts.empty()) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", dir_, " has no tensor '", full_name, "'"));
  }
  const DataType dtype = parts[0]->dtype();
  if (dtype == DT_STRING) return absl::UnimplementedError("slices of string tensors are not supported");
  const TensorShape want_shape = slice.SliceShape(full_shape);
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(CpuAllocator(), dtype, want_shape));
  // The manifest's entries passed CheckManifestEntries when it was read: each
  // stored value has its slice's shape, and the slices of a variable are
  // disjoint, so the elements copied add up to the elements covered.
  int64_t copied = 0;
  for (const TensorEntry* e : parts) {
    auto stored_full = TensorShape::FromProto(e->full_shape());
    if (!stored_full.ok() || *stored_full != full_shape || e->dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint ", dir_, ": tensor '", full_name, "' has shape ",
                                                     stored_full.ok() ? stored_full->DebugString() : "?", " and dtype ",
                                                     DataTypeString(e->dtype()), ", requested ",
                                                     full_shape.DebugString(), " ", DataTypeString(dtype)));
    }
    TensorSlice stored = TensorSlice::Full(full_shape.dims());
    if (!e->slice_spec().empty()) {
      auto parsed = ParseSliceSpec(e->slice_spec(), full_shape);
      if (!parsed.ok()) return absl::DataLossError(absl::StrCat("checkpoint ", dir_, ": ", parsed.status().message()));
      stored = *parsed;
    }
    // Skip entries that do not overlap the request without reading them.
    bool overlaps = true;
    for (int d = 0; d < full_shape.dims(); ++d) {
      int64_t lo = std::max(stored.Start(d), slice.Start(d));
      int64_t hi = std::min(stored.Start(d) + stored.Length(d, full_shape), slice.Start(d) + slice.Length(d, full_shape));
      if (hi <= lo) overlaps = false;
    }
    if (!overlaps) continue;
    SLUICE_ASSIGN_OR_RETURN(Tensor value, ReadTensor(e->key(), check));
    auto n = CopySliceIntersection(full_shape, stored, value, slice, &out);
    if (!n.ok()) {
      return absl::DataLossError(absl::StrCat("checkpoint ", dir_, ": tensor '", e->key(), "': ", n.status().message()));
    }
    copied += *n;
  }
  if (copied != want_shape.num_elements()) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", dir_, ": the stored slices of '", full_name,
                                            "' cover ", copied, " of the ", want_shape.num_elements(),
                                            " requested elements of slice '", slice.ToString(), "'"));
  }
  return out;
}

absl::Status CheckpointReader::VerifyFiles() {
  const std::string files_path = JoinPath(dir_, kFilesName);
  auto loss = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat("checkpoint ", dir_, ": ", what));
  };
  auto text = ReadRegularFile(env_, files_path, kMaxFilesBytes);
  if (!text.ok()) return loss(std::string(text.status().message()));
  std::vector<std::string> lines = absl::StrSplit(*text, '\n', absl::SkipEmpty());
  if (lines.empty() || !absl::StartsWith(lines.back(), "crc32c ") || text->back() != '\n') {
    return loss("file " + files_path + " is truncated");
  }
  const size_t body_len = text->size() - lines.back().size() - 1;
  uint32_t stored = 0;
  if (!absl::SimpleHexAtoi(lines.back().substr(7), &stored) || stored != crc32c::Value(text->data(), body_len)) {
    return loss("file " + files_path + " fails its CRC");
  }
  lines.pop_back();
  // FILES names only what the directory holds: its paths are compared with
  // the listing (which refuses symlinks, FIFOs and devices), never opened as
  // given, so no line can lead a read out of the checkpoint.
  SLUICE_ASSIGN_OR_RETURN(auto present, ListCheckpointFiles(env_, dir_));
  std::set<std::string> listed;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    auto bad_line = [&](const std::string& why) {
      return loss(absl::StrCat("file ", files_path, " line ", i + 1, ": ", why, " in '", line, "'"));
    };
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    uint64_t size = 0;
    if (f.size() != 3 || !absl::SimpleAtoi(f[1], &size)) return bad_line("not <path> <size> <crc>");
    if (!IsPlainRelativePath(f[0])) return bad_line("the path leaves the checkpoint directory");
    if (!listed.insert(f[0]).second) return bad_line("the path is listed twice");
    const std::string path = JoinPath(dir_, f[0]);
    auto it = present.find(f[0]);
    if (it == present.end()) return loss("file " + path + " is missing");
    const uint64_t actual = it->second;
    present.erase(it);
    if (actual != size) return loss(absl::StrCat("file ", path, " has ", actual, " bytes, expected ", size));
    if (f[2] == "-") continue;
    uint32_t want = 0;
    if (f[2].size() != 8 || !absl::SimpleHexAtoi(f[2], &want)) return bad_line("bad CRC");
    // Only small files carry a CRC (FORMAT.md): a read here is bounded.
    if (size > kInventoryCrcMaxBytes) return bad_line(absl::StrCat("a CRC for a file over ", kInventoryCrcMaxBytes, " bytes"));
    auto data = ReadRegularFile(env_, path, size);
    if (!data.ok()) return loss(std::string(data.status().message()));
    const uint32_t crc = crc32c::Value(*data);
    if (crc != want) return loss(absl::StrCat("file ", path, " CRC mismatch (expected ", Hex(want), ", computed ", Hex(crc), ")"));
  }
  for (const auto& [rel, size] : present) {
    if (rel == kFilesName || rel == "LOCK" || absl::EndsWith(rel, "/LOCK")) continue;  // not listed (FORMAT.md)
    return loss(absl::StrCat("file ", JoinPath(dir_, rel), " is not listed in ", files_path));
  }
  return absl::OkStatus();
}

absl::Status CheckpointReader::VerifyAll() {
  SLUICE_RETURN_IF_ERROR(VerifyFiles());
  for (int i = 0; i < manifest_.num_shards(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(rocksdb::DB* db, Shard(i));
    const std::string path = ShardPath(i);
    SLUICE_ASSIGN_OR_RETURN(CheckpointManifest m, ReadShardManifest(db, path));
    m.set_shard_index(manifest_.shard_index());
    if (m.SerializeAsString() != manifest_.SerializeAsString()) {
      return absl::DataLossError(absl::StrCat("checkpoint ", dir_, ": store ", path, ": manifest differs from shard ",
                                              manifest_.shard_index(), "'s"));
    }
    rocksdb::Status s = db->VerifyChecksum();
    if (!s.ok()) return absl::DataLossError(absl::StrCat("checkpoint ", dir_, ": store ", path, ": ", s.ToString()));
  }
  for (const TensorEntry& e : manifest_.tensors()) {
    SLUICE_RETURN_IF_ERROR(ReadTensor(e.key(), /*check=*/true).status());
  }
  return absl::OkStatus();
}

}  // namespace checkpoint
}  // namespace sluice
