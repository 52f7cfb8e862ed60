// BundleReader: see tensor_bundle_reader.h and FORMAT.md "TensorFlow
// checkpoints".
#include "checkpoint/tensor_bundle_reader.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "checkpoint/leveldb_table.h"
#include "checkpoint/tensor_bundle_format.h"
#include "engine/platform/crc32c.h"

namespace sluice {
namespace checkpoint {
namespace {

// Most data shards a header may claim (TensorFlow writes one per device).
constexpr int kMaxBundleShards = 1 << 16;

std::string Quoted(const std::string& name) { return absl::StrCat("'", name, "'"); }

}  // namespace

absl::StatusOr<std::unique_ptr<BundleReader>> BundleReader::Open(const std::string& prefix, Env* env) {
  const std::string index_name = BundleIndexFilename(prefix);
  absl::StatusOr<std::string> contents = ReadFileToString(env, index_name, kMaxBundleIndexBytes);
  if (!contents.ok()) {
    if (absl::IsNotFound(contents.status())) {
      return absl::NotFoundError(
          absl::StrCat("no TensorFlow checkpoint at prefix ", prefix, ": ", index_name, " does not exist"));
    }
    return contents.status();
  }
  absl::StatusOr<TableEntries> table = ParseTable(*contents, index_name);
  if (!table.ok()) return table.status();
  std::unique_ptr<BundleReader> r(new BundleReader(prefix, env));
  const std::string in_index = absl::StrCat("TensorFlow checkpoint index ", index_name);
  if (table->empty() || !table->front().first.empty()) {
    return absl::DataLossError(absl::StrCat(in_index, ": no header entry (the empty key)"));
  }
  if (!r->header_.ParseFromString(table->front().second)) {
    return absl::DataLossError(absl::StrCat(in_index, ": the header (BundleHeaderProto) does not parse"));
  }
  const BundleHeaderProto& h = r->header_;
  if (h.num_shards() < 1 || h.num_shards() > kMaxBundleShards) {
    return absl::DataLossError(absl::StrCat(in_index, ": header claims ", h.num_shards(), " data shards (1 to ",
                                            kMaxBundleShards, " allowed)"));
  }
  if (h.endianness() != BundleHeaderProto::LITTLE) {
    return absl::UnimplementedError(absl::StrCat(in_index, ": big-endian bundles are not supported"));
  }
  if (h.version().min_consumer() > kBundleVersion) {
    return absl::UnimplementedError(absl::StrCat(in_index, ": written for bundle readers of version >= ",
                                                 h.version().min_consumer(), "; we read version ", kBundleVersion));
  }
  // Data files: each must exist; entries must lie inside them.
  std::vector<uint64_t> sizes;
  for (int i = 0; i < h.num_shards(); ++i) {
    const std::string name = BundleDataFilename(prefix, i, h.num_shards());
    auto size = env->GetFileSize(name);
    if (!size.ok()) {
      return absl::Status(size.status().code(), absl::StrCat("TensorFlow checkpoint ", prefix, ": data file ", name,
                                                             " is missing or unreadable: ", size.status().message()));
    }
    auto file = env->NewRandomAccessFile(name);
    if (!file.ok()) return file.status();
    sizes.push_back(*size);
    r->data_files_.push_back(*std::move(file));
  }
  for (size_t i = 1; i < table->size(); ++i) {
    const std::string& name = (*table)[i].first;
    BundleEntryProto e;
    if (!e.ParseFromString((*table)[i].second)) {
      return absl::DataLossError(absl::StrCat(in_index, ": the entry of tensor ", Quoted(name), " does not parse"));
    }
    const std::string what = absl::StrCat(in_index, ": tensor ", Quoted(name));
    if (e.slices_size() == 0) {
      if (!BundleSupportsDtype(e.dtype())) {
        return absl::DataLossError(absl::StrCat(what, " has unknown or unsupported dtype ",
                                                DataTypeString(e.dtype())));
      }
      if (e.shard_id() < 0 || e.shard_id() >= h.num_shards()) {
        return absl::DataLossError(absl::StrCat(what, " is in data shard ", e.shard_id(), " of ", h.num_shards()));
      }
      absl::StatusOr<TensorShape> shape = TensorShape::FromProto(e.shape());
      if (!shape.ok()) return absl::DataLossError(absl::StrCat(what, " has a bad shape: ", shape.status().message()));
      const std::string data_name = BundleDataFilename(prefix, e.shard_id(), h.num_shards());
      const uint64_t file_size = sizes[e.shard_id()];
      if (e.offset() < 0 || e.size() < 0 || static_cast<uint64_t>(e.offset()) > file_size ||
          static_cast<uint64_t>(e.size()) > file_size - static_cast<uint64_t>(e.offset())) {
        return absl::DataLossError(absl::StrCat(what, " claims bytes [", e.offset(), ", +", e.size(), ") of ",
                                                data_name, ", which holds ", file_size, " bytes"));
      }
      const uint64_t elements = static_cast<uint64_t>(shape->num_elements());
      const uint64_t size = static_cast<uint64_t>(e.size());
      if (e.dtype() == DT_STRING) {
        // Each string takes at least its one-byte length, plus the 4-byte CRC.
        if (size < 4 || elements > size - 4) {
          return absl::DataLossError(absl::StrCat(what, " has ", elements, " strings but only ", size, " bytes in ",
                                                  data_name));
        }
      } else {
        const uint64_t dsize = static_cast<uint64_t>(DataTypeSize(e.dtype()));
        if (elements > size / dsize || elements * dsize != size) {
          return absl::DataLossError(absl::StrCat(what, " of shape ", shape->DebugString(), " ",
                                                  DataTypeString(e.dtype()), " needs ", elements,
                                                  " elements of ", dsize, " bytes, the entry has ", size, " bytes at offset ",
                                                  e.offset(), " of ", data_name));
        }
      }
      r->shapes_.emplace(name, *shape);
    }
    r->entries_.emplace(name, std::move(e));
  }
  return r;
}

const BundleEntryProto* BundleReader::Find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

TensorShape BundleReader::ShapeOf(const std::string& name) const {
  auto it = shapes_.find(name);
  return it == shapes_.end() ? TensorShape() : it->second;
}

absl::StatusOr<Tensor> BundleReader::Read(const std::string& name) const {
  const BundleEntryProto* e = Find(name);
  if (e == nullptr) {
    return absl::NotFoundError(absl::StrCat("TensorFlow checkpoint ", prefix_, " has no tensor ", Quoted(name)));
  }
  if (e->slices_size() > 0) {
    return absl::UnimplementedError(absl::StrCat("TensorFlow checkpoint ", prefix_, ": tensor ", Quoted(name),
                                                 ": partitioned (sliced) tensors in a TensorFlow checkpoint are not "
                                                 "supported"));
  }
  const std::string data_name = BundleDataFilename(prefix_, e->shard_id(), header_.num_shards());
  const std::string what =
      absl::StrCat("TensorFlow checkpoint ", data_name, ": tensor ", Quoted(name), " at offset ", e->offset());
  absl::StatusOr<Tensor> t = Tensor::Allocate(CpuAllocator(), e->dtype(), shapes_.at(name));
  if (!t.ok()) return t.status();
  const RandomAccessFile& file = *data_files_[e->shard_id()];
  const size_t size = static_cast<size_t>(e->size());
  const uint32_t expected = crc32c::Unmask(e->crc32c());
  std::string storage;
  char* scratch;
  if (e->dtype() == DT_STRING) {
    storage.resize(size);
    scratch = storage.data();
  } else {
    scratch = static_cast<char*>(t->raw_data());
  }
  if (size == 0) {  // an empty fixed-size tensor: nothing to read
    if (expected != 0) return absl::DataLossError(absl::StrCat(what, ": CRC32C mismatch (corrupt entry)"));
    return t;
  }
  absl::string_view got;
  absl::Status s = file.Read(static_cast<uint64_t>(e->offset()), size, &got, scratch);
  if (!s.ok()) return s;
  if (got.size() != size) {
    return absl::DataLossError(absl::StrCat(what, ": read ", got.size(), " of ", size, " bytes (file truncated?)"));
  }
  if (got.data() != scratch) std::memmove(scratch, got.data(), size);
  if (e->dtype() == DT_STRING) {
    s = DecodeBundleStrings(absl::string_view(scratch, size), expected, what, &*t);
    if (!s.ok()) return s;
    return t;
  }
  if (crc32c::Value(scratch, size) != expected) {
    return absl::DataLossError(absl::StrCat(what, ": CRC32C mismatch (corrupt data)"));
  }
  if (e->dtype() == DT_BOOL) {
    for (size_t i = 0; i < size; ++i) {
      if (static_cast<uint8_t>(scratch[i]) > 1) {
        return absl::DataLossError(absl::StrCat(what, ": bool element ", i, " is neither 0 nor 1"));
      }
    }
  }
  return t;
}

}  // namespace checkpoint
}  // namespace sluice
