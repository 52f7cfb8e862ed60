// Fuzz target: the checkpoint reader (checkpoint/checkpoint_reader.h) on a shard store whose
// keys and values are the fuzzer's: the manifest, tensor headers and chunks are all stored as
// given, under valid RocksDB checksums (what a crafted or buggy writer could leave; the CRCs of
// the store cannot vouch for the contents). Input: a piece (uint16 length, then bytes) holding
// the FILES inventory (empty: the target writes a true one), then key and value pieces until
// the end. The store goes to ckpt-1/shard-00000-of-00001 under a temporary directory; then
// Open, ReadTensor and ReadSlice of every manifest entry, VerifyFiles and VerifyAll.
// Asserted beyond "no crash": every error is DataLoss (NotFound for a missing tensor,
// Unimplemented for a slice of strings); a tensor
// read without error has the dtype and shape its manifest entry gives.
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/rocksdb_util.h"
#include "checkpoint/store_format.h"
#include "checkpoint/tensor_slice.h"
#include "rocksdb/db.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

// On tmpfs when there is one: every input writes a store, and fsyncs there cost nothing.
std::string ScratchDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string base = tmp != nullptr ? tmp : "/tmp";
  if (tmp == nullptr && Env::Default()->IsDirectory("/dev/shm")) base = "/dev/shm";
  return absl::StrCat(base, "/sluice_ckpt_fuzz.", getpid());
}

void CheckReadStatus(const absl::Status& s, const char* what) {
  FUZZ_CHECK(s.ok() || absl::IsDataLoss(s) || absl::IsNotFound(s), "%s: unexpected status: %s", what,
             s.ToString().c_str());
}

void FuzzCheckpoint(const uint8_t* data, size_t size) {
  Env* env = Env::Default();
  fuzz::InputBytes input(data, size);
  const absl::string_view files = input.Piece();
  const std::string root = ScratchDir();
  (void)env->DeleteRecursively(root);
  const std::string dir = JoinPath(root, checkpoint::CheckpointDirName(1));
  const std::string store = JoinPath(dir, checkpoint::ShardDirName(0, 1));
  FUZZ_CHECK(env->CreateDirs(dir).ok(), "cannot create %s", dir.c_str());
  {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(checkpoint::StoreOptions(/*write=*/true), store, &raw);
    FUZZ_CHECK(s.ok(), "cannot create the store: %s", s.ToString().c_str());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteOptions no_wal;  // the Flush below writes the SST
    no_wal.disableWAL = true;
    while (!input.empty()) {
      const absl::string_view key = input.Piece();
      const absl::string_view value = input.Piece();
      FUZZ_CHECK(db->Put(no_wal, rocksdb::Slice(key.data(), key.size()),
                         rocksdb::Slice(value.data(), value.size()))
                     .ok(),
                 "Put failed");
    }
    FUZZ_CHECK(db->Flush(rocksdb::FlushOptions()).ok(), "Flush failed");
    FUZZ_CHECK(db->Close().ok(), "Close failed");
  }
  if (files.empty()) {
    FUZZ_CHECK(checkpoint::WriteFilesInventory(env, dir).ok(), "cannot write FILES");
  } else {
    auto f = env->NewWritableFile(JoinPath(dir, checkpoint::kFilesName));
    FUZZ_CHECK(f.ok() && (*f)->Append(files).ok() && (*f)->Close().ok(), "cannot write FILES");
  }

  auto reader = checkpoint::CheckpointReader::Open(dir, env);
  if (!reader.ok()) {
    CheckReadStatus(reader.status(), "Open");
    return;
  }
  for (const checkpoint::TensorEntry& entry : (*reader)->manifest().tensors()) {
    for (bool check : {false, true}) {
      absl::StatusOr<Tensor> t = (*reader)->ReadTensor(entry.key(), check);
      CheckReadStatus(t.status(), "ReadTensor");
      if (!t.ok()) continue;
      FUZZ_CHECK(t->dtype() == static_cast<DataType>(entry.dtype()), "%s: dtype differs from the manifest",
                 entry.key().c_str());
      auto shape = TensorShape::FromProto(entry.shape());
      FUZZ_CHECK(shape.ok() && *shape == t->shape(), "%s: shape differs from the manifest", entry.key().c_str());
    }
    if (!entry.full_name().empty()) {
      auto full = TensorShape::FromProto(entry.full_shape());
      if (full.ok()) {
        absl::StatusOr<Tensor> t =
            (*reader)->ReadSlice(entry.full_name(), *full, checkpoint::TensorSlice::Full(full->dims()));
        if (!(absl::IsUnimplemented(t.status()) && entry.dtype() == DT_STRING)) {  // not supported for strings
          CheckReadStatus(t.status(), "ReadSlice");
        }
      }
    }
  }
  CheckReadStatus((*reader)->VerifyFiles(), "VerifyFiles");
  CheckReadStatus((*reader)->VerifyAll(), "VerifyAll");
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::FuzzCheckpoint(data, size);
  return 0;
}
