// CPU kernels for RandomUniform, RandomUniformInt, RandomStandardNormal,
// TruncatedNormal and RandomShuffle on Philox streams (philox_random.h) keyed
// by (seed, seed2).
// Element i of a run's output depends only on (key, run number, i), so fills
// run in parallel on the intra-op pool and the values do not depend on the
// thread count. Each kernel numbers its runs with an atomic counter (like
// TensorFlow's GuardedPhiloxRandom), so the k-th run of a node is the same
// in every process for a fixed nonzero (seed, seed2).
// Thread safety: Compute may run concurrently; the run counter is atomic.
#include <atomic>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/philox_random.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace {

absl::Status ShapeFromInput(const Tensor& t, TensorShape* shape) {
  if (t.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("shape must be a vector, got ", t.shape().DebugString()));
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    dims.push_back(t.dtype() == DT_INT32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i]);
  }
  for (int64_t d : dims) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("shape has a negative dimension ", d));
  }
  auto built = TensorShape::Build(dims);
  if (!built.ok()) return built.status();
  *shape = *built;
  return absl::OkStatus();
}

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

class PhiloxKernel : public OpKernel {
 public:
  explicit PhiloxKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    int64_t seed = 0, seed2 = 0;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed", &seed));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed2", &seed2));
    key_ = philox::KeyFromSeeds(seed, seed2);
  }

 protected:
  uint32_t NextRun() { return runs_.fetch_add(1, std::memory_order_relaxed); }
  philox::Key key_;

 private:
  std::atomic<uint32_t> runs_{0};
};

// Values per Philox block: 4 for 32-bit sources, 2 for double.
template <typename T>
constexpr int64_t kPerBlock = std::is_same<T, double>::value ? 2 : 4;

// Fills out[first_block*kPerBlock ...] for blocks [first, last).
template <typename T, Distribution D>
void FillBlocks(philox::Key key, uint32_t run, int64_t first, int64_t last, int64_t n, T* out) {
  using Acc = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
  constexpr int64_t per = kPerBlock<T>;
  for (int64_t b = first; b < last; ++b) {
    Acc u[4];
    const philox::Block bits = philox::Generate(key, b, run);
    if (per == 2) {
      u[0] = static_cast<Acc>(philox::ToDouble(bits[0], bits[1]));
      u[1] = static_cast<Acc>(philox::ToDouble(bits[2], bits[3]));
    } else {
      for (int j = 0; j < 4; ++j) u[j] = static_cast<Acc>(philox::ToFloat(bits[j]));
    }
    Acc v[4];
    if (D == Distribution::kUniform) {
      for (int j = 0; j < per; ++j) v[j] = u[j];
    } else if (D == Distribution::kNormal) {
      for (int j = 0; j < per; j += 2) philox::BoxMuller<Acc>(u[j], u[j + 1], &v[j], &v[j + 1]);
    } else {
      // Each element redraws from its own sub-streams until |z| < 2.
      for (int j = 0; j < per; ++j) {
        const int64_t i = b * per + j;
        Acc z = 0, z1 = 0;
        for (uint32_t attempt = 1;; ++attempt) {
          const philox::Block r = philox::Generate(key, i, run, attempt);
          Acc a, c;
          if (per == 2) {
            a = static_cast<Acc>(philox::ToDouble(r[0], r[1]));
            c = static_cast<Acc>(philox::ToDouble(r[2], r[3]));
          } else {
            a = static_cast<Acc>(philox::ToFloat(r[0]));
            c = static_cast<Acc>(philox::ToFloat(r[1]));
          }
          philox::BoxMuller<Acc>(a, c, &z, &z1);
          if (std::abs(z) < Acc(2)) break;
          if (std::abs(z1) < Acc(2)) {
            z = z1;
            break;
          }
        }
        v[j] = z;
      }
    }
    for (int j = 0; j < per; ++j) {
      const int64_t i = b * per + j;
      if (i < n) {
        T value = static_cast<T>(v[j]);
        // Rounding to half/bfloat16 may round a uniform up to 1: keep [0, 1).
        if (D == Distribution::kUniform && !(static_cast<Acc>(value) < Acc(1))) value = static_cast<T>(0);
        if (D == Distribution::kTruncatedNormal && !(std::abs(static_cast<Acc>(value)) < Acc(2))) {
          value = static_cast<T>(0);
        }
        out[i] = value;
      }
    }
  }
}

template <typename T, Distribution D>
class RandomOp : public PhiloxKernel {
 public:
  using PhiloxKernel::PhiloxKernel;
  void Compute(OpKernelContext* ctx) override {
    TensorShape shape;
    OP_REQUIRES_OK(ctx, ShapeFromInput(ctx->input(0), &shape));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    const uint32_t run = NextRun();
    const int64_t n = out->NumElements();
    if (n == 0) return;
    const int64_t blocks = (n + kPerBlock<T> - 1) / kPerBlock<T>;
    T* o = out->data<T>();
    const philox::Key key = key_;
    const double cost = D == Distribution::kUniform ? 60 : 150;
    ParallelForRanges(
        ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), blocks, static_cast<int64_t>(cost), 1,
        [&](Eigen::Index first, Eigen::Index last) {
                                          FillBlocks<T, D>(key, run, first, last, n, o);
                                        });
  }
};

// Integers in [lo, hi): lo + bits % (hi - lo), with 32 random bits per value
// for int32 and 64 for int64 (the range computed unsigned, so it may span the
// whole type). The modulo's bias is below range / 2^32 (2^64).
template <typename T>
class RandomUniformIntOp : public PhiloxKernel {
 public:
  using PhiloxKernel::PhiloxKernel;
  void Compute(OpKernelContext* ctx) override {
    TensorShape shape;
    OP_REQUIRES_OK(ctx, ShapeFromInput(ctx->input(0), &shape));
    const Tensor& minval = ctx->input(1);
    const Tensor& maxval = ctx->input(2);
    OP_REQUIRES(ctx, minval.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("minval must be a scalar, got shape ", minval.shape().DebugString())));
    OP_REQUIRES(ctx, maxval.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("maxval must be a scalar, got shape ", maxval.shape().DebugString())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    const uint32_t run = NextRun();
    const int64_t n = out->NumElements();
    if (n == 0) return;  // no values: any bounds will do (as TensorFlow)
    const T lo = minval.data<T>()[0], hi = maxval.data<T>()[0];
    OP_REQUIRES(ctx, lo < hi, absl::InvalidArgumentError(absl::StrCat("need minval < maxval, got ", lo, " >= ", hi)));
    using U = typename std::make_unsigned<T>::type;
    const U range = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
    constexpr int64_t per = sizeof(T) == 4 ? 4 : 2;
    const int64_t blocks = (n + per - 1) / per;
    T* o = out->data<T>();
    const philox::Key key = key_;
    ParallelForRanges(
        ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), blocks, 60, 1,
        [&](Eigen::Index first, Eigen::Index last) {
          for (int64_t b = first; b < last; ++b) {
            const philox::Block bits = philox::Generate(key, b, run);
            for (int64_t j = 0; j < per && b * per + j < n; ++j) {
              const U r = per == 4 ? static_cast<U>(bits[j])
                                   : static_cast<U>((static_cast<uint64_t>(bits[2 * j]) << 32) | bits[2 * j + 1]);
              o[b * per + j] = static_cast<T>(static_cast<U>(lo) + r % range);
            }
          }
        });
  }
};
REGISTER_KERNEL_BUILDER(Name("RandomUniformInt").Device(kDeviceCpu).TypeConstraint<int32_t>("Tout"),
                        RandomUniformIntOp<int32_t>);
REGISTER_KERNEL_BUILDER(Name("RandomUniformInt").Device(kDeviceCpu).TypeConstraint<int64_t>("Tout"),
                        RandomUniformIntOp<int64_t>);

// Fisher-Yates over the first dimension; rows are moved as raw bytes (or as
// strings for DT_STRING).
class RandomShuffleOp : public PhiloxKernel {
 public:
  using PhiloxKernel::PhiloxKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const uint32_t run = NextRun();
    if (value.dims() == 0 || value.dim_size(0) <= 1) {
      ctx->set_output(0, value);
      return;
    }
    const int64_t n = value.dim_size(0);
    std::vector<int64_t> perm(n);
    for (int64_t i = 0; i < n; ++i) perm[i] = i;
    for (int64_t i = n - 1; i > 0; --i) {
      const philox::Block bits = philox::Generate(key_, static_cast<uint64_t>(i), run);
      const uint64_t r = (static_cast<uint64_t>(bits[0]) << 32) | bits[1];
      std::swap(perm[i], perm[r % static_cast<uint64_t>(i + 1)]);
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, value.shape(), &out));
    const int64_t row = value.NumElements() / n;
    if (row == 0) return;
    if (value.dtype() == DT_STRING) {
      const tstring* src = value.data<tstring>();
      tstring* dst = out->data<tstring>();
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < row; ++j) dst[i * row + j] = src[perm[i] * row + j];
      }
      return;
    }
    const size_t row_bytes = static_cast<size_t>(row) * DataTypeSize(value.dtype());
    const char* src = static_cast<const char*>(value.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * row_bytes, src + perm[i] * row_bytes, row_bytes);
  }
};

#define SLUICE_REGISTER_RANDOM_(NAME, D, T)                                                                     \
  REGISTER_KERNEL_BUILDER(Name(NAME).Device(kDeviceCpu).TypeConstraint<T>("dtype"), RandomOp<T, Distribution::D>)
#define SLUICE_REGISTER_RANDOM_ALL_(T)                                     \
  SLUICE_REGISTER_RANDOM_("RandomUniform", kUniform, T);                  \
  SLUICE_REGISTER_RANDOM_("RandomStandardNormal", kNormal, T);            \
  SLUICE_REGISTER_RANDOM_("TruncatedNormal", kTruncatedNormal, T)
SLUICE_REGISTER_RANDOM_ALL_(float);
SLUICE_REGISTER_RANDOM_ALL_(double);
SLUICE_REGISTER_RANDOM_ALL_(half);
SLUICE_REGISTER_RANDOM_ALL_(bfloat16);
#undef SLUICE_REGISTER_RANDOM_ALL_
#undef SLUICE_REGISTER_RANDOM_

REGISTER_KERNEL_BUILDER(Name("RandomShuffle").Device(kDeviceCpu), RandomShuffleOp);

}  // namespace
}  // namespace sluice
