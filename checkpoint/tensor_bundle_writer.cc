// WriteTensorBundle: see tensor_bundle_writer.h and FORMAT.md "TensorFlow
// checkpoints".
#include "checkpoint/tensor_bundle_writer.h"

#include <unistd.h>

#include <atomic>
#include <map>

#include "absl/strings/str_cat.h"
#include "checkpoint/leveldb_table.h"
#include "checkpoint/tensor_bundle.pb.h"
#include "checkpoint/tensor_bundle_format.h"
#include "engine/platform/crc32c.h"
#include "engine/platform/status_macros.h"

namespace sluice {
namespace checkpoint {
namespace {

absl::Status WriteFiles(Env* env, const std::string& prefix, const std::string& tmp_data,
                        const std::string& tmp_index, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::map<std::string, BundleEntryProto> entries;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> data, env->NewWritableFile(tmp_data));
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    BundleEntryProto e;
    e.set_dtype(t.dtype());
    t.shape().AsProto(e.mutable_shape());
    e.set_offset(offset);
    uint32_t crc = 0;
    if (t.dtype() == DT_STRING) {
      const std::string bytes = EncodeBundleStrings(t, &crc);
      SLUICE_RETURN_IF_ERROR(data->Append(bytes));
      e.set_size(static_cast<int64_t>(bytes.size()));
    } else {
      absl::string_view bytes(static_cast<const char*>(t.raw_data()), t.TotalBytes());
      crc = crc32c::Value(bytes);
      SLUICE_RETURN_IF_ERROR(data->Append(bytes));
      e.set_size(static_cast<int64_t>(bytes.size()));
    }
    e.set_crc32c(crc32c::Mask(crc));
    offset += e.size();
    entries.emplace(name, std::move(e));
  }
  SLUICE_RETURN_IF_ERROR(data->Sync());
  SLUICE_RETURN_IF_ERROR(data->Close());

  TableEntries table;
  BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kBundleVersion);
  table.emplace_back("", header.SerializeAsString());
  for (const auto& [name, e] : entries) table.emplace_back(name, e.SerializeAsString());
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> index, env->NewWritableFile(tmp_index));
  SLUICE_RETURN_IF_ERROR(index->Append(BuildTable(table)));
  SLUICE_RETURN_IF_ERROR(index->Sync());
  SLUICE_RETURN_IF_ERROR(index->Close());

  SLUICE_RETURN_IF_ERROR(env->RenameFile(tmp_data, BundleDataFilename(prefix, 0, 1)));
  SLUICE_RETURN_IF_ERROR(env->RenameFile(tmp_index, BundleIndexFilename(prefix)));
  return env->SyncDir(Dirname(prefix));
}

}  // namespace

absl::Status WriteTensorBundle(Env* env, const std::string& prefix,
                               const std::vector<std::pair<std::string, Tensor>>& tensors) {
  if (prefix.empty()) return absl::InvalidArgumentError("TensorFlow checkpoint: empty prefix");
  std::map<std::string, int> seen;
  for (const auto& [name, t] : tensors) {
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("TensorFlow checkpoint ", prefix,
                                                     ": a tensor name is empty (the empty key is the header)"));
    }
    if (!seen.emplace(name, 0).second) {
      return absl::InvalidArgumentError(absl::StrCat("TensorFlow checkpoint ", prefix, ": tensor '", name,
                                                     "' is listed twice"));
    }
    if (!t.IsInitialized() || !BundleSupportsDtype(t.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat("TensorFlow checkpoint ", prefix, ": tensor '", name,
                                                     "' is uninitialized or of unsupported dtype ",
                                                     DataTypeString(t.dtype())));
    }
  }
  SLUICE_RETURN_IF_ERROR(env->CreateDirs(Dirname(prefix)));
  static std::atomic<int64_t> counter{0};
  const std::string suffix = absl::StrCat(".tempstate-", ::getpid(), "-", counter++);
  const std::string tmp_data = BundleDataFilename(prefix, 0, 1) + suffix;
  const std::string tmp_index = BundleIndexFilename(prefix) + suffix;
  absl::Status s = WriteFiles(env, prefix, tmp_data, tmp_index, tensors);
  if (!s.ok()) {
    env->DeleteFile(tmp_data).IgnoreError();
    env->DeleteFile(tmp_index).IgnoreError();
  }
  return s;
}

}  // namespace checkpoint
}  // namespace sluice
