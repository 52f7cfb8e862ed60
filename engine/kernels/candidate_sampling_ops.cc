// CPU kernels for LogUniformCandidateSampler(AtStep) and ComputeAccidentalHits.
// The sampler draws class floor(exp(u * log(range_max + 1))) - 1 for uniform
// u from a Philox stream keyed by (seed, seed2) and numbered by run, as the
// other random ops (random_ops.cc), or (AtStep) by the step input, as
// Dropout; P(class c) = log((c + 2) / (c + 1)) /
// log(range_max + 1). With unique, it draws until num_sampled distinct
// classes came up, and an expected count is 1 - (1 - p)^tries; otherwise
// p * num_sampled. ComputeAccidentalHits lists (row, position) pairs in row
// order, then in the order of the row's true classes, as TensorFlow does
// (sampled_softmax_loss scatters them with validate_indices=False).
// Thread safety: Compute may run concurrently; the run counter is atomic.
#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/philox_random.h"

namespace sluice {
namespace {

absl::Status CheckTrueClasses(const Tensor& t, int64_t num_true) {
  if (t.dims() != 2 || t.dim_size(1) != num_true) {
    return absl::InvalidArgumentError(absl::StrCat("true_classes must be [batch, num_true = ", num_true,
                                                   "], got shape ", t.shape().DebugString()));
  }
  return absl::OkStatus();
}

class LogUniformCandidateSamplerOp : public OpKernel {
 public:
  // `at_step`: the stream's run number is input 1 (a scalar step), not the run count.
  LogUniformCandidateSamplerOp(OpKernelConstruction* ctx, bool at_step) : OpKernel(ctx), at_step_(at_step) {
    int64_t seed = 0, seed2 = 0;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed", &seed));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed2", &seed2));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_true", &num_true_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_sampled", &num_sampled_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("unique", &unique_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("range_max", &range_max_));
    OP_REQUIRES(ctx, num_sampled_ >= 1 && range_max_ >= 1 && num_true_ >= 1,
                absl::InvalidArgumentError("num_true, num_sampled and range_max must be positive"));
    OP_REQUIRES(ctx, !unique_ || num_sampled_ <= range_max_,
                absl::InvalidArgumentError(absl::StrCat("unique sampling needs num_sampled (", num_sampled_,
                                                        ") <= range_max (", range_max_, ")")));
    key_ = philox::KeyFromSeeds(seed, seed2);
    log_range_ = std::log1p(static_cast<double>(range_max_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& true_classes = ctx->input(0);
    OP_REQUIRES_OK(ctx, CheckTrueClasses(true_classes, num_true_));
    const int64_t* classes = true_classes.data<int64_t>();
    for (int64_t i = 0; i < true_classes.NumElements(); ++i) {
      // TensorFlow computes counts for classes >= range_max too (never
      // sampled); a negative class has no probability.
      OP_REQUIRES(ctx, classes[i] >= 0,
                  absl::InvalidArgumentError(absl::StrCat("true class ", classes[i], " (element ", i,
                                                          ") is negative")));
    }
    Tensor *sampled, *true_expected, *sampled_expected;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({num_sampled_}), &sampled));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, true_classes.shape(), &true_expected));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({num_sampled_}), &sampled_expected));
    uint32_t run = 0;
    if (at_step_) {
      const Tensor& step = ctx->input(1);
      OP_REQUIRES(ctx, step.dims() == 0 && step.NumElements() == 1,
                  absl::InvalidArgumentError(absl::StrCat("step must be a scalar, got ", step.shape().DebugString())));
      run = static_cast<uint32_t>(step.data<int64_t>()[0]);
    } else {
      run = runs_.fetch_add(1, std::memory_order_relaxed);
    }
    int64_t* out = sampled->data<int64_t>();
    std::unordered_set<int64_t> seen;
    int64_t tries = 0, filled = 0;
    philox::Block bits{};
    // Two uniforms per Philox block; unique draws end: num_sampled <= range_max.
    while (filled < num_sampled_) {
      if (tries % 2 == 0) bits = philox::Generate(key_, static_cast<uint64_t>(tries / 2), run);
      const double u = tries % 2 == 0 ? philox::ToDouble(bits[0], bits[1]) : philox::ToDouble(bits[2], bits[3]);
      ++tries;
      const int64_t value = Sample(u);
      if (unique_ && !seen.insert(value).second) continue;
      out[filled++] = value;
    }
    for (int64_t i = 0; i < num_sampled_; ++i) sampled_expected->data<float>()[i] = Expected(out[i], tries);
    for (int64_t i = 0; i < true_classes.NumElements(); ++i) {
      true_expected->data<float>()[i] = Expected(classes[i], tries);
    }
  }

 private:
  int64_t Sample(double u) const {
    const int64_t v = static_cast<int64_t>(std::floor(std::exp(u * log_range_))) - 1;
    return std::min(std::max<int64_t>(v, 0), range_max_ - 1);
  }
  float Expected(int64_t c, int64_t tries) const {
    const double p = std::log((c + 2.0) / (c + 1.0)) / log_range_;
    if (tries == num_sampled_) return static_cast<float>(p * num_sampled_);
    return static_cast<float>(-std::expm1(static_cast<double>(tries) * std::log1p(-p)));
  }

  const bool at_step_;
  int64_t num_true_ = 1, num_sampled_ = 1, range_max_ = 1;
  bool unique_ = false;
  double log_range_ = 0;
  philox::Key key_;
  std::atomic<uint32_t> runs_{0};
};

class ComputeAccidentalHitsOp : public OpKernel {
 public:
  explicit ComputeAccidentalHitsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_true", &num_true_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& true_classes = ctx->input(0);
    const Tensor& sampled = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckTrueClasses(true_classes, num_true_));
    OP_REQUIRES(ctx, sampled.dims() == 1,
                absl::InvalidArgumentError(absl::StrCat("sampled_candidates must be a vector, got shape ",
                                                        sampled.shape().DebugString())));
    // As TensorFlow: a class sampled more than once counts at its last
    // position only (candidates are presumed unique).
    std::unordered_map<int64_t, int64_t> position;
    for (int64_t j = 0; j < sampled.NumElements(); ++j) position[sampled.data<int64_t>()[j]] = j;
    std::vector<int32_t> rows;
    std::vector<int64_t> ids;
    const int64_t batch = true_classes.dim_size(0);
    OP_REQUIRES(ctx, batch <= INT32_MAX, absl::InvalidArgumentError("more than 2^31 - 1 rows of true_classes"));
    for (int64_t i = 0; i < batch; ++i) {
      for (int64_t k = 0; k < num_true_; ++k) {
        auto it = position.find(true_classes.data<int64_t>()[i * num_true_ + k]);
        if (it == position.end()) continue;
        rows.push_back(static_cast<int32_t>(i));
        ids.push_back(it->second);
      }
    }
    const int64_t n = static_cast<int64_t>(rows.size());
    Tensor *indices, *id_out, *weights;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n}), &indices));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({n}), &id_out));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({n}), &weights));
    for (int64_t k = 0; k < n; ++k) {
      indices->data<int32_t>()[k] = rows[k];
      id_out->data<int64_t>()[k] = ids[k];
      weights->data<float>()[k] = -FLT_MAX;
    }
  }

 private:
  int64_t num_true_ = 1;
};

class RunCountedSamplerOp : public LogUniformCandidateSamplerOp {
 public:
  explicit RunCountedSamplerOp(OpKernelConstruction* ctx) : LogUniformCandidateSamplerOp(ctx, /*at_step=*/false) {}
};

class StepKeyedSamplerOp : public LogUniformCandidateSamplerOp {
 public:
  explicit StepKeyedSamplerOp(OpKernelConstruction* ctx) : LogUniformCandidateSamplerOp(ctx, /*at_step=*/true) {}
};

REGISTER_KERNEL_BUILDER(Name("LogUniformCandidateSampler").Device(kDeviceCpu), RunCountedSamplerOp);
REGISTER_KERNEL_BUILDER(Name("LogUniformCandidateSamplerAtStep").Device(kDeviceCpu), StepKeyedSamplerOp);
REGISTER_KERNEL_BUILDER(Name("ComputeAccidentalHits").Device(kDeviceCpu), ComputeAccidentalHitsOp);

}  // namespace
}  // namespace sluice
