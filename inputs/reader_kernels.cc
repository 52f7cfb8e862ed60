// CPU kernels for the reader ops (reader_ops.cc). Reader ops create their
// reader in the device's ResourceMgr on first use (files through
// Env::Default()) and output its handle by reference. ReaderRead and
// ReaderReadUpTo are AsyncOpKernels: waiting for a file name holds no thread
// and is cancellable.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "inputs/readers.h"
#include "inputs/resource_handle.h"

namespace sluice {
namespace {

class ReaderOpBase : public OpKernel {
 public:
  explicit ReaderOpBase(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, rn_.Read(ctx)); }
  void Compute(OpKernelContext* ctx) override {
    auto r = ctx->resource_manager()->LookupOrCreate<ReaderBase>(
        rn_.container, rn_.name, [this]() -> absl::StatusOr<std::shared_ptr<ReaderBase>> {
          std::shared_ptr<ReaderBase> made = Create();
          made->handle()->data<tstring>()[0] = rn_.container;
          made->handle()->data<tstring>()[1] = rn_.name;
          return made;
        });
    OP_REQUIRES_OK(ctx, r.status());
    OP_REQUIRES(ctx, (*r)->reader_type() == type_string(),
                absl::InvalidArgumentError(absl::StrCat("shared reader '", rn_.name, "' is a ", (*r)->reader_type(),
                                                        ", not a ", type_string())));
    ReaderBase* reader = r->get();
    ctx->set_output_ref(0, reader->handle_mu(), reader->handle(), std::move(r).value());
  }
  bool IsExpensive() const override { return false; }

 protected:
  virtual std::shared_ptr<ReaderBase> Create() = 0;
  ResourceName rn_;
};

class TFRecordReaderOp : public ReaderOpBase {
 public:
  explicit TFRecordReaderOp(OpKernelConstruction* ctx) : ReaderOpBase(ctx) {
    std::string compression;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("compression_type", &compression));
    OP_REQUIRES(ctx, compression.empty() || compression == "NONE",
                absl::UnimplementedError(absl::StrCat(NodeContext(ctx->def()), "compression_type '", compression,
                                                      "' is not supported (only uncompressed TFRecord files)")));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shuffle_seed", &shuffle_seed_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("empty_work_limit", &empty_work_limit_));
  }
  std::shared_ptr<ReaderBase> Create() override {
    auto reader = std::make_shared<TFRecordReader>(rn_.name, Env::Default(), RecordReaderOptions{},
                                                   static_cast<uint64_t>(shuffle_seed_));
    reader->set_empty_work_limit(empty_work_limit_);
    return reader;
  }

 private:
  int64_t shuffle_seed_ = 0;
  int64_t empty_work_limit_ = 0;
};

class TextLineReaderOp : public ReaderOpBase {
 public:
  explicit TextLineReaderOp(OpKernelConstruction* ctx) : ReaderOpBase(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("skip_header_lines", &skip_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shuffle_seed", &shuffle_seed_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("empty_work_limit", &empty_work_limit_));
  }
  std::shared_ptr<ReaderBase> Create() override {
    auto reader =
        std::make_shared<TextLineReader>(rn_.name, Env::Default(), skip_, static_cast<uint64_t>(shuffle_seed_));
    reader->set_empty_work_limit(empty_work_limit_);
    return reader;
  }

 private:
  int64_t skip_ = 0;
  int64_t shuffle_seed_ = 0;
  int64_t empty_work_limit_ = 0;
};

class IdxRecordReaderOp : public ReaderOpBase {
 public:
  explicit IdxRecordReaderOp(OpKernelConstruction* ctx) : ReaderOpBase(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shuffle_seed", &shuffle_seed_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_shards", &num_shards_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shard_index", &shard_index_));
    OP_REQUIRES(ctx, num_shards_ >= 1 && shard_index_ >= 0 && shard_index_ < num_shards_,
                absl::InvalidArgumentError(absl::StrCat(NodeContext(ctx->def()), "shard_index ", shard_index_,
                                                        " is not one of num_shards ", num_shards_)));
  }
  std::shared_ptr<ReaderBase> Create() override {
    return std::make_shared<IdxRecordReader>(rn_.name, Env::Default(), static_cast<uint64_t>(shuffle_seed_),
                                             num_shards_, shard_index_);
  }

 private:
  int64_t shuffle_seed_ = 0;
  int64_t num_shards_ = 1;
  int64_t shard_index_ = 0;
};

class TextWindowReaderOp : public ReaderOpBase {
 public:
  explicit TextWindowReaderOp(OpKernelConstruction* ctx) : ReaderOpBase(ctx) {
    std::string format, split;
    std::vector<std::string> words;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("files", &corpus_.files));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("format", &format));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("split", &split));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("lowercase", &corpus_.lowercase));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seq_len", &seq_len_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("vocabulary", &words));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shuffle_seed", &shuffle_seed_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_shards", &num_shards_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shard_index", &shard_index_));
    const std::string where = NodeContext(ctx->def());
    auto f = text::ParseFormat(format);
    OP_REQUIRES(ctx, f.ok(), absl::InvalidArgumentError(absl::StrCat(where, f.status().message())));
    corpus_.format = *f;
    OP_REQUIRES(ctx, split == "train" || split == "test" || split == "all",
                absl::InvalidArgumentError(absl::StrCat(where, "split '", split, "' is not 'train', 'test' or 'all'")));
    split_ = split == "train" ? text::Split::kTrain : split == "test" ? text::Split::kTest : text::Split::kAll;
    OP_REQUIRES(ctx, !corpus_.files.empty(), absl::InvalidArgumentError(absl::StrCat(where, "no corpus files")));
    OP_REQUIRES(ctx, seq_len_ >= 1 && seq_len_ <= (int64_t{1} << 24),
                absl::InvalidArgumentError(absl::StrCat(where, "seq_len ", seq_len_, " is not in [1, 2^24]")));
    OP_REQUIRES(ctx, num_shards_ >= 1 && shard_index_ >= 0 && shard_index_ < num_shards_,
                absl::InvalidArgumentError(absl::StrCat(where, "shard_index ", shard_index_,
                                                        " is not one of num_shards ", num_shards_)));
    auto v = text::Vocabulary::FromWords(words, "attr vocabulary");
    OP_REQUIRES(ctx, v.ok(), absl::InvalidArgumentError(absl::StrCat(where, v.status().message())));
    vocabulary_ = std::move(v).value();
  }
  std::shared_ptr<ReaderBase> Create() override {
    return std::make_shared<TextWindowReader>(rn_.name, Env::Default(), corpus_, split_, vocabulary_, seq_len_,
                                              static_cast<uint64_t>(shuffle_seed_), num_shards_, shard_index_);
  }

 private:
  text::Corpus corpus_;
  text::Split split_ = text::Split::kTrain;
  text::Vocabulary vocabulary_;
  int64_t seq_len_ = 0;
  int64_t shuffle_seed_ = 0;
  int64_t num_shards_ = 1;
  int64_t shard_index_ = 0;
};

class ReaderReadOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto reader = LookupFromHandle<ReaderBase>(ctx, 0);
    OP_REQUIRES_OK_ASYNC(ctx, reader.status(), done);
    auto queue = LookupFromHandle<QueueBase>(ctx, 1);
    OP_REQUIRES_OK_ASYNC(ctx, queue.status(), done);
    (*reader)->ReadAsync(std::move(queue).value(), ctx->cancellation_manager(),
                         [ctx, done](const absl::Status& s, std::string key, std::string value) {
                           if (!s.ok()) {
                             ctx->SetStatus(s);
                           } else {
                             ctx->set_output(0, Tensor::Scalar<tstring>(std::move(key)));
                             ctx->set_output(1, Tensor::Scalar<tstring>(std::move(value)));
                           }
                           done();
                         });
  }
};

class ReaderReadUpToOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& n = ctx->input(2);
    OP_REQUIRES_ASYNC(ctx, n.dims() == 0 && n.dtype() == DT_INT64,
                      absl::InvalidArgumentError("num_records must be a scalar int64"), done);
    const int64_t num_records = n.scalar<int64_t>();
    OP_REQUIRES_ASYNC(ctx, num_records >= 1,
                      absl::InvalidArgumentError(absl::StrCat("num_records must be at least 1, got ", num_records)),
                      done);
    auto reader = LookupFromHandle<ReaderBase>(ctx, 0);
    OP_REQUIRES_OK_ASYNC(ctx, reader.status(), done);
    auto queue = LookupFromHandle<QueueBase>(ctx, 1);
    OP_REQUIRES_OK_ASYNC(ctx, queue.status(), done);
    (*reader)->ReadUpToAsync(
        std::move(queue).value(), ctx->cancellation_manager(), num_records,
        [ctx, done](const absl::Status& s, std::vector<std::string> keys, std::vector<std::string> values) {
          if (!s.ok()) {
            ctx->SetStatus(s);
          } else {
            const TensorShape shape({static_cast<int64_t>(keys.size())});
            Tensor k(DT_STRING, shape), v(DT_STRING, shape);
            for (size_t i = 0; i < keys.size(); ++i) {
              k.data<tstring>()[i] = std::move(keys[i]);
              v.data<tstring>()[i] = std::move(values[i]);
            }
            ctx->set_output(0, std::move(k));
            ctx->set_output(1, std::move(v));
          }
          done();
        });
  }
};

// The small synchronous reader verbs.
class ReaderVerbOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto reader = LookupFromHandle<ReaderBase>(ctx, 0);
    OP_REQUIRES_OK(ctx, reader.status());
    ReaderBase* r = reader->get();
    const std::string& op = type_string();
    if (op == "ReaderNumRecordsProduced") {
      ctx->set_output(0, Tensor::Scalar<int64_t>(r->NumRecordsProduced()));
    } else if (op == "ReaderNumWorkUnitsCompleted") {
      ctx->set_output(0, Tensor::Scalar<int64_t>(r->NumWorkUnitsCompleted()));
    } else if (op == "ReaderSerializeState") {
      ctx->set_output(0, Tensor::Scalar<tstring>(r->SerializeState()));
    } else if (op == "ReaderRestoreState") {
      const Tensor& state = ctx->input(1);
      OP_REQUIRES(ctx, state.NumElements() == 1 && state.dims() == 0,
                  absl::InvalidArgumentError("state must be a scalar string"));
      OP_REQUIRES_OK(ctx, r->RestoreState(state.scalar<tstring>()));
    } else {
      r->Reset();
    }
  }
};

REGISTER_KERNEL_BUILDER(Name("TFRecordReader").Device(kDeviceCpu), TFRecordReaderOp);
REGISTER_KERNEL_BUILDER(Name("TextLineReader").Device(kDeviceCpu), TextLineReaderOp);
REGISTER_KERNEL_BUILDER(Name("IdxRecordReader").Device(kDeviceCpu), IdxRecordReaderOp);
REGISTER_KERNEL_BUILDER(Name("TextWindowReader").Device(kDeviceCpu), TextWindowReaderOp);
REGISTER_KERNEL_BUILDER(Name("ReaderRead").Device(kDeviceCpu), ReaderReadOp);
REGISTER_KERNEL_BUILDER(Name("ReaderReadUpTo").Device(kDeviceCpu), ReaderReadUpToOp);
REGISTER_KERNEL_BUILDER(Name("ReaderNumRecordsProduced").Device(kDeviceCpu), ReaderVerbOp);
REGISTER_KERNEL_BUILDER(Name("ReaderNumWorkUnitsCompleted").Device(kDeviceCpu), ReaderVerbOp);
REGISTER_KERNEL_BUILDER(Name("ReaderSerializeState").Device(kDeviceCpu), ReaderVerbOp);
REGISTER_KERNEL_BUILDER(Name("ReaderRestoreState").Device(kDeviceCpu), ReaderVerbOp);
REGISTER_KERNEL_BUILDER(Name("ReaderReset").Device(kDeviceCpu), ReaderVerbOp);

}  // namespace
}  // namespace sluice
