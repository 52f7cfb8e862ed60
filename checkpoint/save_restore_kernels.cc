// CPU kernels for the checkpoint ops of save_restore_ops.cc. SaveV2,
// RestoreV2 and MergeV2Checkpoints read and write TensorFlow bundles
// (tensor_bundle_reader.h, tensor_bundle_writer.h). Save writes a
// one-shard checkpoint directory through WriteCheckpointDir (into a temporary
// directory that then replaces `filename`); the Restore family reads through
// CheckpointReader, so corruption surfaces as DataLoss naming the file and
// tensor. Kernels keep no per-step state (thread-safe).
#include <unistd.h>

#include <atomic>
#include <set>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/tensor_bundle_format.h"
#include "checkpoint/tensor_bundle_reader.h"
#include "checkpoint/tensor_bundle_writer.h"
#include "checkpoint/tensor_slice.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace checkpoint {
namespace {

absl::Status ScalarString(OpKernelContext* ctx, int i, const char* what, std::string* out) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_STRING || t.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a string scalar, got ", t.DebugString(3)));
  }
  *out = t.data<tstring>()[0];
  return absl::OkStatus();
}

class SaveOp : public OpKernel {
 public:
  SaveOp(OpKernelConstruction* ctx, bool slices) : OpKernel(ctx), slices_(slices) {}

  void Compute(OpKernelContext* ctx) override {
    std::string filename;
    OP_REQUIRES_OK(ctx, ScalarString(ctx, 0, "filename", &filename));
    const Tensor& names = ctx->input(1);
    const int data_start = slices_ ? 3 : 2;
    const int64_t n = ctx->num_inputs() - data_start;
    OP_REQUIRES(ctx, names.dtype() == DT_STRING && names.NumElements() == n,
                absl::InvalidArgumentError(absl::StrCat("tensor_names must hold ", n, " strings, got ",
                                                        names.DebugString(3))));
    const Tensor* specs = nullptr;
    if (slices_) {
      specs = &ctx->input(2);
      OP_REQUIRES(ctx, specs->dtype() == DT_STRING && specs->NumElements() == n,
                  absl::InvalidArgumentError(absl::StrCat("shapes_and_slices must hold ", n, " strings")));
    }
    std::vector<SaveEntry> entries(n);
    for (int64_t i = 0; i < n; ++i) {
      entries[i].full_name = names.data<tstring>()[i];
      entries[i].value = ctx->input(data_start + i);
      if (specs != nullptr && !specs->data<tstring>()[i].empty()) {
        auto parsed = ParseShapeAndSlice(specs->data<tstring>()[i]);
        OP_REQUIRES_OK(ctx, parsed.status());
        entries[i].full_shape = parsed->full_shape;
        entries[i].slice_spec = parsed->slice.ToString();
      }
    }
    static std::atomic<int64_t> counter{0};
    Env* env = Env::Default();
    const std::string tmp = absl::StrCat(filename, ".tmp-", ::getpid(), "-", counter++);
    env->DeleteRecursively(tmp).IgnoreError();
    absl::Status s = WriteCheckpointDir(env, tmp, entries, WriteOptions());
    if (s.ok()) s = env->DeleteRecursively(filename);
    if (s.ok()) s = env->RenameFile(tmp, filename);
    if (!s.ok()) env->DeleteRecursively(tmp).IgnoreError();
    OP_REQUIRES_OK(ctx, s);
  }

 private:
  const bool slices_;
};

class SaveTensorsOp : public SaveOp {
 public:
  explicit SaveTensorsOp(OpKernelConstruction* ctx) : SaveOp(ctx, false) {}
};
class SaveSlicesOp : public SaveOp {
 public:
  explicit SaveSlicesOp(OpKernelConstruction* ctx) : SaveOp(ctx, true) {}
};

// Restore, RestoreAndCheck (check = true) and RestoreSlice (slice = true).
class RestoreOp : public OpKernel {
 public:
  RestoreOp(OpKernelConstruction* ctx, bool check, bool slice) : OpKernel(ctx), check_(check), slice_(slice) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dt", &dt_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("preferred_shard", &preferred_shard_));
  }

  void Compute(OpKernelContext* ctx) override {
    std::string pattern, name, spec;
    OP_REQUIRES_OK(ctx, ScalarString(ctx, 0, "file_pattern", &pattern));
    OP_REQUIRES_OK(ctx, ScalarString(ctx, 1, "tensor_name", &name));
    if (slice_) OP_REQUIRES_OK(ctx, ScalarString(ctx, 2, "shape_and_slice", &spec));
    auto reader = CheckpointReader::Open(pattern, Env::Default(), static_cast<int>(preferred_shard_));
    OP_REQUIRES_OK(ctx, reader.status());
    absl::StatusOr<Tensor> value;
    if (slice_ && !spec.empty()) {
      auto parsed = ParseShapeAndSlice(spec);
      OP_REQUIRES_OK(ctx, parsed.status());
      value = (*reader)->ReadSlice(name, parsed->full_shape, parsed->slice, check_);
    } else if (slice_ || (*reader)->FindEntry(name) == nullptr) {
      // A whole tensor saved in slices can be restored whole.
      const TensorEntry* any = nullptr;
      for (const TensorEntry& e : (*reader)->manifest().tensors()) {
        if (e.full_name() == name) any = &e;
      }
      if (any == nullptr) {
        value = absl::NotFoundError(absl::StrCat("checkpoint ", pattern, " has no tensor '", name, "'"));
      } else {
        auto full = TensorShape::FromProto(any->full_shape());
        OP_REQUIRES_OK(ctx, full.status());
        value = (*reader)->ReadSlice(name, *full, TensorSlice::Full(full->dims()), check_);
      }
    } else {
      value = (*reader)->ReadTensor(name, check_);
    }
    OP_REQUIRES_OK(ctx, value.status());
    OP_REQUIRES(ctx, value->dtype() == dt_,
                absl::InvalidArgumentError(absl::StrCat("checkpoint ", pattern, ": tensor '", name, "' has dtype ",
                                                        DataTypeString(value->dtype()), ", the op expects ",
                                                        DataTypeString(dt_))));
    OP_REQUIRES_OK(ctx, CheckValue(name, *value));
    ctx->set_output(0, *std::move(value));
  }

 protected:
  // What a subclass requires of the restored tensor `name` besides its dtype.
  virtual absl::Status CheckValue(const std::string& name, const Tensor& value) const { return absl::OkStatus(); }

 private:
  const bool check_;
  const bool slice_;
  DataType dt_ = DT_INVALID;
  int64_t preferred_shard_ = -1;
};

class RestorePlainOp : public RestoreOp {
 public:
  explicit RestorePlainOp(OpKernelConstruction* ctx) : RestoreOp(ctx, false, false) {}
};
// Also checks the restored tensor against its `shape` attr: a checkpoint of
// another model (a layer's units changed) is an error naming both shapes,
// not a variable silently taking the checkpoint's shape.
class RestoreAndCheckOp : public RestoreOp {
 public:
  explicit RestoreAndCheckOp(OpKernelConstruction* ctx) : RestoreOp(ctx, true, false) {
    TensorShapeProto proto;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shape", &proto));
    auto shape = PartialShape::FromProto(proto);
    OP_REQUIRES_OK(ctx, shape.status());
    expected_ = *std::move(shape);
  }

  absl::Status CheckValue(const std::string& name, const Tensor& value) const override {
    if (!expected_.rank_known() || expected_.IsCompatibleWith(value.shape())) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' in the checkpoint has shape ",
                                                   value.shape().DebugString(), "; this model's variable is ",
                                                   expected_.DebugString()));
  }

 private:
  PartialShape expected_;
};
class RestoreSliceOp : public RestoreOp {
 public:
  explicit RestoreSliceOp(OpKernelConstruction* ctx) : RestoreOp(ctx, true, true) {}
};

// The tensor_names and shape_and_slices inputs of SaveV2 / RestoreV2: n
// strings each, every slice spec "".
absl::Status NamesAndWholeSlices(OpKernelContext* ctx, int64_t n, std::vector<std::string>* names) {
  const Tensor& t = ctx->input(1);
  const Tensor& specs = ctx->input(2);
  if (t.dtype() != DT_STRING || t.NumElements() != n) {
    return absl::InvalidArgumentError(absl::StrCat("tensor_names must hold ", n, " strings, got ", t.DebugString(3)));
  }
  if (specs.dtype() != DT_STRING || specs.NumElements() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape_and_slices must hold ", n, " strings, got ", specs.DebugString(3)));
  }
  for (int64_t i = 0; i < n; ++i) {
    names->push_back(t.data<tstring>()[i]);
    if (!specs.data<tstring>()[i].empty()) {
      return absl::UnimplementedError(absl::StrCat("tensor '", (*names)[i], "': shape_and_slice '",
                                                   specs.data<tstring>()[i],
                                                   "': partitioned (sliced) tensors in a TensorFlow checkpoint are "
                                                   "not supported; save the whole variable"));
    }
  }
  return absl::OkStatus();
}

class SaveV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::string prefix;
    OP_REQUIRES_OK(ctx, ScalarString(ctx, 0, "prefix", &prefix));
    const int64_t n = ctx->num_inputs() - 3;
    std::vector<std::string> names;
    OP_REQUIRES_OK(ctx, NamesAndWholeSlices(ctx, n, &names));
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (int64_t i = 0; i < n; ++i) tensors.emplace_back(names[i], ctx->input(3 + i));
    OP_REQUIRES_OK(ctx, WriteTensorBundle(Env::Default(), prefix, tensors));
  }
};

class RestoreV2Op : public OpKernel {
 public:
  explicit RestoreV2Op(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtypes", &dtypes_));
  }
  void Compute(OpKernelContext* ctx) override {
    std::string prefix;
    OP_REQUIRES_OK(ctx, ScalarString(ctx, 0, "prefix", &prefix));
    std::vector<std::string> names;
    OP_REQUIRES_OK(ctx, NamesAndWholeSlices(ctx, static_cast<int64_t>(dtypes_.size()), &names));
    auto reader = BundleReader::Open(prefix, Env::Default());
    OP_REQUIRES_OK(ctx, reader.status());
    for (size_t i = 0; i < names.size(); ++i) {
      absl::StatusOr<Tensor> value = (*reader)->Read(names[i]);
      OP_REQUIRES_OK(ctx, value.status());
      OP_REQUIRES(ctx, value->dtype() == dtypes_[i],
                  absl::InvalidArgumentError(absl::StrCat("TensorFlow checkpoint ", prefix, ": tensor '", names[i],
                                                          "' has dtype ", DataTypeString(value->dtype()),
                                                          ", the op expects ", DataTypeString(dtypes_[i]))));
      ctx->set_output(static_cast<int>(i), *std::move(value));
    }
  }

 private:
  std::vector<DataType> dtypes_;
};

class MergeV2CheckpointsOp : public OpKernel {
 public:
  explicit MergeV2CheckpointsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("delete_old_dirs", &delete_old_dirs_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("allow_missing_files", &allow_missing_files_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& sources = ctx->input(0);
    OP_REQUIRES(ctx, sources.dtype() == DT_STRING && sources.dims() <= 1,
                absl::InvalidArgumentError("checkpoint_prefixes must be a string vector"));
    std::string destination;
    OP_REQUIRES_OK(ctx, ScalarString(ctx, 1, "destination_prefix", &destination));
    Env* env = Env::Default();
    std::vector<std::pair<std::string, Tensor>> tensors;
    std::vector<std::string> merged;
    std::set<std::string> seen;
    for (int64_t i = 0; i < sources.NumElements(); ++i) {
      const std::string prefix = sources.data<tstring>()[i];
      if (allow_missing_files_ && !IsTensorBundle(env, prefix)) continue;
      auto reader = BundleReader::Open(prefix, env);
      OP_REQUIRES_OK(ctx, reader.status());
      for (const auto& [name, entry] : (*reader)->entries()) {
        OP_REQUIRES(ctx, seen.insert(name).second,
                    absl::InvalidArgumentError(absl::StrCat("MergeV2Checkpoints: tensor '", name, "' of ", prefix,
                                                            " is also in an earlier checkpoint prefix")));
        auto value = (*reader)->Read(name);
        OP_REQUIRES_OK(ctx, value.status());
        tensors.emplace_back(name, *std::move(value));
      }
      merged.push_back(prefix);
    }
    OP_REQUIRES(ctx, !merged.empty() || sources.NumElements() == 0,
                absl::NotFoundError(absl::StrCat("MergeV2Checkpoints: none of the ", sources.NumElements(),
                                                 " checkpoint prefixes exists")));
    OP_REQUIRES_OK(ctx, WriteTensorBundle(env, destination, tensors));
    for (const std::string& prefix : merged) {
      if (prefix == destination) continue;
      auto reader = BundleReader::Open(prefix, env);
      const int shards = reader.ok() ? (*reader)->header().num_shards() : 1;
      env->DeleteFile(BundleIndexFilename(prefix)).IgnoreError();
      for (int s = 0; s < shards; ++s) env->DeleteFile(BundleDataFilename(prefix, s, shards)).IgnoreError();
      if (delete_old_dirs_ && Dirname(prefix) != Dirname(destination)) {
        // Only an empty directory goes (rmdir semantics).
        auto children = env->GetChildren(Dirname(prefix));
        if (children.ok() && children->empty()) env->DeleteRecursively(Dirname(prefix)).IgnoreError();
      }
    }
  }

 private:
  bool delete_old_dirs_ = true;
  bool allow_missing_files_ = false;
};

class SnapshotOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor copy;
    {
      absl::MutexLock lock(ctx->input_ref_mutex(0));
      const Tensor& v = ctx->input(0);
      OP_REQUIRES(ctx, v.IsInitialized(),
                  absl::FailedPreconditionError(absl::StrCat("variable read by ", name(), " is uninitialized")));
      copy = v.Clone();
    }
    ctx->set_output(0, std::move(copy));
  }
};

REGISTER_KERNEL_BUILDER(Name("Save").Device(kDeviceCpu), SaveTensorsOp);
REGISTER_KERNEL_BUILDER(Name("SaveSlices").Device(kDeviceCpu), SaveSlicesOp);
REGISTER_KERNEL_BUILDER(Name("Restore").Device(kDeviceCpu), RestorePlainOp);
REGISTER_KERNEL_BUILDER(Name("RestoreAndCheck").Device(kDeviceCpu), RestoreAndCheckOp);
REGISTER_KERNEL_BUILDER(Name("RestoreSlice").Device(kDeviceCpu), RestoreSliceOp);
REGISTER_KERNEL_BUILDER(Name("SaveV2").Device(kDeviceCpu), SaveV2Op);
REGISTER_KERNEL_BUILDER(Name("RestoreV2").Device(kDeviceCpu), RestoreV2Op);
REGISTER_KERNEL_BUILDER(Name("MergeV2Checkpoints").Device(kDeviceCpu), MergeV2CheckpointsOp);
REGISTER_KERNEL_BUILDER(Name("_CheckpointSnapshot").Device(kDeviceCpu), SnapshotOp);

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
