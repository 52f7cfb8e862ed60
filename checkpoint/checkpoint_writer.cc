// Checkpoint directory writer: see checkpoint_writer.h and FORMAT.md.
#include "checkpoint/checkpoint_writer.h"

#include <algorithm>
#include <map>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "engine/platform/crc32c.h"
#include "checkpoint/manifest.pb.h"
#include "checkpoint/manifest_rules.h"
#include "checkpoint/rocksdb_util.h"
#include "checkpoint/tensor_slice.h"
#include "engine/platform/status_macros.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"

namespace sluice {
namespace checkpoint {
namespace {

struct Prepared {
  const SaveEntry* entry;
  TensorEntry meta;
  std::string storage;  // encoded strings
  absl::string_view bytes;
  std::vector<uint32_t> chunk_crcs;
};

absl::Status Prepare(const SaveEntry& e, uint64_t chunk_bytes, Prepared* p) {
  p->entry = &e;
  if (e.full_name.empty()) return absl::InvalidArgumentError("empty tensor name");
  if (e.full_name.find('\0') != std::string::npos || e.full_name.find('@') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("tensor name '", e.full_name, "' contains '@' or NUL"));
  }
  if (!e.value.IsInitialized()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", e.full_name, "' is uninitialized"));
  }
  TensorEntry& m = p->meta;
  m.set_full_name(e.full_name);
  m.set_dtype(e.value.dtype());
  e.value.shape().AsProto(m.mutable_shape());
  if (e.slice_spec.empty()) {
    e.value.shape().AsProto(m.mutable_full_shape());
  } else {
    SLUICE_ASSIGN_OR_RETURN(TensorSlice slice, ParseSliceSpec(e.slice_spec, e.full_shape));
    if (slice.SliceShape(e.full_shape) != e.value.shape()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", e.full_name, "': slice '", e.slice_spec, "' of ",
                                                     e.full_shape.DebugString(), " has shape ",
                                                     slice.SliceShape(e.full_shape).DebugString(),
                                                     " but the value has shape ", e.value.shape().DebugString()));
    }
    if (e.value.dtype() == DT_STRING) {
      return absl::UnimplementedError(absl::StrCat("tensor '", e.full_name, "': string slices are not supported"));
    }
    m.set_slice_spec(slice.ToString());
    e.full_shape.AsProto(m.mutable_full_shape());
  }
  m.set_key(EntryKey(m.full_name(), m.slice_spec()));
  p->bytes = TensorBytes(e.value, &p->storage);
  m.set_num_bytes(p->bytes.size());
  const uint64_t n = p->bytes.size();
  const uint64_t chunks = n == 0 ? 0 : (n + chunk_bytes - 1) / chunk_bytes;
  m.set_num_chunks(chunks);
  uint32_t whole = 0;
  for (uint64_t c = 0; c < chunks; ++c) {
    uint64_t off = c * chunk_bytes;
    uint64_t len = std::min(chunk_bytes, n - off);
    uint32_t crc = crc32c::Value(p->bytes.data() + off, len);
    p->chunk_crcs.push_back(crc);
    whole = c == 0 ? crc : crc32c::Combine(whole, crc, len);
  }
  m.set_crc32c(whole);
  return absl::OkStatus();
}

// Writes one shard store: all chunk keys (sorted), headers, the manifest.
absl::Status WriteShard(const std::string& store_dir, const std::string& sst_path, const std::vector<Prepared*>& mine,
                        const CheckpointManifest& manifest, uint64_t chunk_bytes) {
  rocksdb::Options options = StoreOptions(/*write=*/true);
  // Creating the database costs several fsyncs: do it while the SST is built.
  rocksdb::DB* raw = nullptr;
  rocksdb::Status open_status;
  std::thread opener([&] { open_status = rocksdb::DB::Open(options, store_dir, &raw); });
  absl::Status built = [&]() -> absl::Status {
    // bytes_per_sync: start writeback every few MB so the final fsync has
    // little left to do; no page-cache invalidation (restores read it back).
    rocksdb::EnvOptions env_options(options);
    env_options.bytes_per_sync = 8 << 20;
    rocksdb::SstFileWriter writer(env_options, options, /*column_family=*/nullptr,
                                  /*invalidate_page_cache=*/false);
    SLUICE_RETURN_IF_ERROR(FromRocksDb(writer.Open(sst_path), "create " + sst_path));
    for (const Prepared* p : mine) {  // sorted by key: chunk keys ascend
      for (uint64_t c = 0; c < p->meta.num_chunks(); ++c) {
        uint64_t off = c * chunk_bytes;
        uint64_t len = std::min<uint64_t>(chunk_bytes, p->bytes.size() - off);
        SLUICE_RETURN_IF_ERROR(FromRocksDb(
            writer.Put(ChunkKey(p->meta.key(), c), rocksdb::Slice(p->bytes.data() + off, len)), "write " + sst_path));
      }
    }
    for (const Prepared* p : mine) {
      TensorEntry header = p->meta;
      for (uint32_t crc : p->chunk_crcs) header.add_chunk_crc32c(crc);
      SLUICE_RETURN_IF_ERROR(
          FromRocksDb(writer.Put(HeaderKey(p->meta.key()), header.SerializeAsString()), "write " + sst_path));
    }
    SLUICE_RETURN_IF_ERROR(
        FromRocksDb(writer.Put(kManifestKey, manifest.SerializeAsString()), "write " + sst_path));
    return FromRocksDb(writer.Finish(), "finish " + sst_path);
  }();
  opener.join();
  std::unique_ptr<rocksdb::DB> db(raw);
  SLUICE_RETURN_IF_ERROR(FromRocksDb(open_status, "create store " + store_dir));
  if (!built.ok()) {
    db->Close().PermitUncheckedError();
    return built;
  }
  rocksdb::IngestExternalFileOptions ingest;
  ingest.move_files = true;
  absl::Status s = FromRocksDb(db->IngestExternalFile({sst_path}, ingest), "ingest into " + store_dir);
  absl::Status c = FromRocksDb(db->Close(), "close " + store_dir);
  if (s.ok()) s = c;
  return s;
}

}  // namespace

absl::Status WriteCheckpointDir(Env* env, const std::string& dir, const std::vector<SaveEntry>& entries,
                                const WriteOptions& options) {
  if (options.num_shards < 1) return absl::InvalidArgumentError("num_shards must be >= 1");
  if (options.chunk_bytes < 1) return absl::InvalidArgumentError("chunk_bytes must be >= 1");
  if (env->FileExists(dir).ok()) return absl::AlreadyExistsError(absl::StrCat("checkpoint directory ", dir, " exists"));

  std::vector<Prepared> prepared(entries.size());
  std::map<std::string, Prepared*> by_key;
  for (size_t i = 0; i < entries.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(Prepare(entries[i], options.chunk_bytes, &prepared[i]));
    if (!by_key.emplace(prepared[i].meta.key(), &prepared[i]).second) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", prepared[i].meta.key(), "' is saved twice"));
    }
  }
  // Greedy balance by bytes: largest first onto the least loaded shard.
  std::vector<Prepared*> by_size;
  for (auto& p : prepared) by_size.push_back(&p);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const Prepared* a, const Prepared* b) { return a->bytes.size() > b->bytes.size(); });
  std::vector<uint64_t> load(options.num_shards, 0);
  for (Prepared* p : by_size) {
    int best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    p->meta.set_shard(best);
    load[best] += p->bytes.size() + 1;
  }

  CheckpointManifest manifest;
  manifest.set_format(kFormatName);
  manifest.set_step(options.step);
  manifest.set_config_hash(options.config_hash);
  manifest.set_num_shards(options.num_shards);
  manifest.set_chunk_bytes(options.chunk_bytes);
  manifest.set_created_unix_micros(absl::ToUnixMicros(absl::Now()));
  std::vector<std::vector<Prepared*>> per_shard(options.num_shards);
  for (auto& kv : by_key) {  // sorted by key
    *manifest.add_tensors() = kv.second->meta;
    per_shard[kv.second->meta.shard()].push_back(kv.second);
  }
  // Never write what a reader would refuse (overlapping slices, slices of
  // one variable with different full shapes, a variable both whole and sliced).
  absl::Status rules = CheckManifestEntries(manifest);
  if (!rules.ok()) return absl::InvalidArgumentError(absl::StrCat("checkpoint ", dir, ": ", rules.message()));

  SLUICE_RETURN_IF_ERROR(env->CreateDirs(dir));
  std::vector<absl::Status> results(options.num_shards);
  auto write_one = [&](int shard) {
    CheckpointManifest m = manifest;
    m.set_shard_index(shard);
    std::string name = ShardDirName(shard, options.num_shards);
    results[shard] = WriteShard(JoinPath(dir, name), JoinPath(dir, name + ".ingest.sst"), per_shard[shard], m,
                                options.chunk_bytes);
    if (env->FileExists(JoinPath(dir, name + ".ingest.sst")).ok()) {
      env->DeleteRecursively(JoinPath(dir, name + ".ingest.sst")).IgnoreError();
    }
  };
  if (options.parallel_shards && options.num_shards > 1) {
    std::vector<std::thread> threads;
    for (int i = 0; i < options.num_shards; ++i) threads.emplace_back(write_one, i);
    for (auto& t : threads) t.join();
  } else {
    for (int i = 0; i < options.num_shards; ++i) write_one(i);
  }
  for (const absl::Status& s : results) SLUICE_RETURN_IF_ERROR(s);
  SLUICE_RETURN_IF_ERROR(WriteFilesInventory(env, dir));
  return SyncTree(env, dir);
}

namespace {
absl::Status ListFiles(Env* env, const std::string& root, const std::string& rel, std::vector<std::string>* out) {
  std::string path = rel.empty() ? root : JoinPath(root, rel);
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> children, env->GetChildren(path));
  for (const std::string& c : children) {
    std::string r = rel.empty() ? c : JoinPath(rel, c);
    if (env->IsDirectory(JoinPath(root, r))) {
      SLUICE_RETURN_IF_ERROR(ListFiles(env, root, r, out));
    } else if (r != kFilesName) {
      out->push_back(r);
    }
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status WriteFilesInventory(Env* env, const std::string& dir) {
  std::vector<std::string> files;
  SLUICE_RETURN_IF_ERROR(ListFiles(env, dir, "", &files));
  std::string text;
  for (const std::string& f : files) {
    if (f == "LOCK" || absl::EndsWith(f, "/LOCK")) continue;  // RocksDB's lock file: empty, rewritten on open
    SLUICE_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(JoinPath(dir, f)));
    if (size > kInventoryCrcMaxBytes) {  // SST files: RocksDB block CRCs and ours cover them
      absl::StrAppendFormat(&text, "%s %d -\n", f, size);
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(std::string data, ReadFileToString(env, JoinPath(dir, f)));
    absl::StrAppendFormat(&text, "%s %d %08x\n", f, data.size(), crc32c::Value(data));
  }
  absl::StrAppendFormat(&text, "crc32c %08x\n", crc32c::Value(text));
  return WriteFileAtomically(env, JoinPath(dir, kFilesName), text);
}

}  // namespace checkpoint
}  // namespace sluice
