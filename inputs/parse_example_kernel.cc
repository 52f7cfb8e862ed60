// ParseExample's CPU kernel: dense features only. Each key's feature must
// have the kind of its dtype (bytes_list for string, float_list, int64_list)
// and exactly as many values as its dense shape holds; a missing feature
// takes its default, or is InvalidArgument when the default is empty.
// Errors name the example (its index, and its name when `names` is given).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "inputs/example.pb.h"
#include "inputs/resource_handle.h"

namespace sluice {
namespace {

class ParseExampleOp : public OpKernel {
 public:
  explicit ParseExampleOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    int64_t nsparse = 0;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("Nsparse", &nsparse));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("Ndense", &ndense_));
    OP_REQUIRES(ctx, nsparse == 0,
                absl::UnimplementedError(absl::StrCat(NodeContext(ctx->def()),
                                                      "sparse features are not supported (Nsparse must be 0)")));
    std::vector<DataType> tdense;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("Tdense", &tdense));
    std::vector<PartialShape> shapes;
    OP_REQUIRES_OK(ctx, GetShapesAttr(ctx->def(), "dense_shapes", &shapes));
    OP_REQUIRES(ctx, static_cast<int64_t>(tdense.size()) == ndense_ && static_cast<int64_t>(shapes.size()) == ndense_,
                absl::InvalidArgumentError(absl::StrCat(NodeContext(ctx->def()), "Ndense is ", ndense_, " but Tdense has ",
                                                        tdense.size(), " and dense_shapes ", shapes.size(), " entries")));
    for (int64_t i = 0; i < ndense_; ++i) {
      OP_REQUIRES(ctx, shapes[i].IsFullyDefined(),
                  absl::InvalidArgumentError(absl::StrCat(NodeContext(ctx->def()), "dense_shapes[", i,
                                                          "] must be fully defined, got ", shapes[i].DebugString())));
      auto shape = TensorShape::Build(shapes[i].dims());
      OP_REQUIRES(ctx, shape.ok(),
                  absl::InvalidArgumentError(absl::StrCat(NodeContext(ctx->def()), "attr 'dense_shapes'[", i,
                                                          "]: ", shape.status().message())));
      shapes_.push_back(*std::move(shape));
    }
    types_ = tdense;
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& serialized = ctx->input(0);
    const Tensor& names = ctx->input(1);
    OP_REQUIRES(ctx, serialized.dims() <= 1,
                absl::InvalidArgumentError(absl::StrCat("serialized must be a vector (or a scalar), got shape ",
                                                        serialized.shape().DebugString())));
    const bool single = serialized.dims() == 0;
    const int64_t batch = serialized.NumElements();
    OP_REQUIRES(ctx, names.NumElements() == 0 || names.NumElements() == batch,
                absl::InvalidArgumentError("names must be empty or have one name per example"));
    std::vector<std::string> keys(ndense_);
    const int key_base = 2;
    const int default_base = key_base + static_cast<int>(ndense_);
    for (int64_t i = 0; i < ndense_; ++i) {
      const Tensor& k = ctx->input(key_base + static_cast<int>(i));
      OP_REQUIRES(ctx, k.NumElements() == 1, absl::InvalidArgumentError("each dense key must be a scalar string"));
      keys[i] = k.data<tstring>()[0];
      const Tensor& def = ctx->input(default_base + static_cast<int>(i));
      OP_REQUIRES(ctx, def.NumElements() == 0 || def.NumElements() == shapes_[i].num_elements(),
                  absl::InvalidArgumentError(absl::StrCat("the default of feature '", keys[i], "' has ",
                                                          def.NumElements(), " values, its dense shape ",
                                                          shapes_[i].DebugString(), " holds ",
                                                          shapes_[i].num_elements())));
    }
    const int out_base = 0;  // no sparse outputs
    std::vector<Tensor*> outs(ndense_);
    for (int64_t i = 0; i < ndense_; ++i) {
      // [batch] + dense shape: checked, a batch of 2^40 empty strings with a
      // dense shape of [2^40] must fail, not CHECK.
      TensorShape shape;
      if (!single) OP_REQUIRES_OK(ctx, shape.TryAddDim(batch));
      for (int64_t d : shapes_[i].dim_sizes()) {
        absl::Status s = shape.TryAddDim(d);
        OP_REQUIRES(ctx, s.ok(),
                    absl::InvalidArgumentError(absl::StrCat("feature '", keys[i], "': a batch of ", batch,
                                                            " examples of dense shape ", shapes_[i].DebugString(), ": ",
                                                            s.message())));
      }
      OP_REQUIRES_OK(ctx, ctx->allocate_output(out_base + static_cast<int>(i), shape, &outs[i]));
    }
    Example example;
    for (int64_t b = 0; b < batch; ++b) {
      auto where = [&] {
        return names.NumElements() > 0 ? absl::StrCat("example ", b, " ('", names.data<tstring>()[b], "')")
                                       : absl::StrCat("example ", b);
      };
      const tstring& bytes = serialized.data<tstring>()[b];
      OP_REQUIRES(ctx, example.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
                  absl::InvalidArgumentError(absl::StrCat("could not parse ", where(), " as a tf.train.Example (",
                                                          bytes.size(), " bytes)")));
      const auto& fmap = example.features().feature();
      for (int64_t i = 0; i < ndense_; ++i) {
        const int64_t n = shapes_[i].num_elements();
        auto it = fmap.find(keys[i]);
        if (it == fmap.end()) {
          const Tensor& def = ctx->input(default_base + static_cast<int>(i));
          OP_REQUIRES(ctx, def.NumElements() > 0,
                      absl::InvalidArgumentError(
                          absl::StrCat(where(), ": feature '", keys[i], "' is required but missing")));
          CopyValues(def, 0, n, outs[i], b * n);
          continue;
        }
        OP_REQUIRES_OK(ctx, Fill(it->second, keys[i], n, outs[i], b * n, where));
      }
    }
  }

 private:
  static void CopyValues(const Tensor& src, int64_t from, int64_t n, Tensor* dst, int64_t at) {
    if (src.dtype() == DT_STRING) {
      std::copy_n(src.data<tstring>() + from, n, dst->data<tstring>() + at);
    } else {
      const size_t es = DataTypeSize(src.dtype());
      std::memcpy(static_cast<char*>(dst->raw_data()) + at * es,
                  static_cast<const char*>(src.raw_data()) + from * es, n * es);
    }
  }

  template <typename Where>
  absl::Status Fill(const Feature& f, const std::string& key, int64_t n, Tensor* out, int64_t at,
                    const Where& where) const {
    auto wrong = [&](absl::string_view kind, int64_t count) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": feature '", key, "' is a ", kind, " of ", count,
                                                     " values; expected ", n, " values of ",
                                                     DataTypeString(out->dtype())));
    };
    switch (out->dtype()) {
      case DT_FLOAT: {
        if (f.kind_case() != Feature::kFloatList) return wrong(KindName(f), Count(f));
        if (f.float_list().value_size() != n) return wrong("float_list", f.float_list().value_size());
        std::copy_n(f.float_list().value().data(), n, out->data<float>() + at);
        return absl::OkStatus();
      }
      case DT_INT64: {
        if (f.kind_case() != Feature::kInt64List) return wrong(KindName(f), Count(f));
        if (f.int64_list().value_size() != n) return wrong("int64_list", f.int64_list().value_size());
        std::copy_n(f.int64_list().value().data(), n, out->data<int64_t>() + at);
        return absl::OkStatus();
      }
      default: {
        if (f.kind_case() != Feature::kBytesList) return wrong(KindName(f), Count(f));
        if (f.bytes_list().value_size() != n) return wrong("bytes_list", f.bytes_list().value_size());
        for (int64_t j = 0; j < n; ++j) out->data<tstring>()[at + j] = f.bytes_list().value(static_cast<int>(j));
        return absl::OkStatus();
      }
    }
  }
  static absl::string_view KindName(const Feature& f) {
    switch (f.kind_case()) {
      case Feature::kBytesList: return "bytes_list";
      case Feature::kFloatList: return "float_list";
      case Feature::kInt64List: return "int64_list";
      default: return "feature with no list";
    }
  }
  static int64_t Count(const Feature& f) {
    switch (f.kind_case()) {
      case Feature::kBytesList: return f.bytes_list().value_size();
      case Feature::kFloatList: return f.float_list().value_size();
      case Feature::kInt64List: return f.int64_list().value_size();
      default: return 0;
    }
  }

  int64_t ndense_ = 0;
  std::vector<DataType> types_;
  std::vector<TensorShape> shapes_;
};

REGISTER_KERNEL_BUILDER(Name("ParseExample").Device(kDeviceCpu), ParseExampleOp);

}  // namespace
}  // namespace sluice
