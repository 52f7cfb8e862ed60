// PaddingFIFOQueue batching and RandomShuffleQueue sampling.
#include "inputs/fifo_queue.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

absl::StatusOr<std::shared_ptr<PaddingFIFOQueue>> PaddingFIFOQueue::Create(std::string name, int32_t capacity,
                                                                           DataTypeVector types,
                                                                           std::vector<PartialShape> shapes) {
  if (shapes.size() != types.size()) {
    return absl::InvalidArgumentError(absl::StrCat("PaddingFIFOQueue '", name, "' needs one shape per component (",
                                                   types.size(), "), got ", shapes.size()));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (!shapes[i].rank_known()) {
      return absl::InvalidArgumentError(
          absl::StrCat("PaddingFIFOQueue '", name, "' component ", i, " needs a shape of known rank"));
    }
  }
  return std::make_shared<PaddingFIFOQueue>(std::move(name), capacity, std::move(types), std::move(shapes));
}

absl::StatusOr<Tensor> PaddingFIFOQueue::BatchComponent(const std::vector<Tuple>& elements, int c) const {
  const PartialShape& declared = shapes()[c];
  std::vector<int64_t> dims(declared.dims().begin(), declared.dims().end());
  for (int64_t& d : dims) d = std::max<int64_t>(d, 0);
  for (const Tuple& e : elements) {
    for (int d = 0; d < e[c].dims(); ++d) dims[d] = std::max(dims[d], e[c].dim_size(d));
  }
  // The padded shape mixes dims of the declared shape and of every element:
  // built with the checking path, it fails here rather than CHECKing.
  TensorShape batch_shape({static_cast<int64_t>(elements.size())});
  for (int64_t d : dims) {
    absl::Status s = batch_shape.TryAddDim(d);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("PaddingFIFOQueue '", name(), "' component ", c, ": a batch of ",
                                                     elements.size(), " padded to [", absl::StrJoin(dims, ","),
                                                     "]: ", s.message()));
    }
  }
  auto batch = Tensor::Allocate(CpuAllocator(), component_types()[c], batch_shape);
  if (!batch.ok()) return batch.status();
  const DataType dtype = component_types()[c];
  const int rank = static_cast<int>(dims.size());
  int64_t row = 1;  // elements per padded element: a sub-product of batch_shape, so it cannot overflow
  for (int64_t d : dims) row *= d;
  const size_t esize = static_cast<size_t>(DataTypeSize(dtype));
  if (dtype != DT_STRING && batch->TotalBytes() > 0) std::memset(batch->raw_data(), 0, batch->TotalBytes());
  // Copies each element's innermost rows into the padded layout.
  for (size_t i = 0; i < elements.size(); ++i) {
    const Tensor& e = elements[i][c];
    if (e.NumElements() == 0) continue;
    const int64_t inner = rank == 0 ? 1 : e.dim_size(rank - 1);
    const int64_t rows = e.NumElements() / inner;
    for (int64_t r = 0; r < rows; ++r) {
      // Destination offset of row r: mixed-radix index over the element's dims.
      int64_t rem = r, dst = 0, stride = rank == 0 ? 1 : dims[rank - 1];
      for (int d = rank - 2; d >= 0; --d) {
        dst += (rem % e.dim_size(d)) * stride;
        rem /= e.dim_size(d);
        stride *= dims[d];
      }
      const int64_t base = static_cast<int64_t>(i) * row + dst;
      if (dtype == DT_STRING) {
        std::copy(e.data<tstring>() + r * inner, e.data<tstring>() + (r + 1) * inner, batch->data<tstring>() + base);
      } else {
        std::memcpy(static_cast<char*>(batch->raw_data()) + base * esize,
                    static_cast<const char*>(e.raw_data()) + r * inner * esize, inner * esize);
      }
    }
  }
  return batch;
}

absl::StatusOr<std::shared_ptr<RandomShuffleQueue>> RandomShuffleQueue::Create(
    std::string name, int32_t capacity, int32_t min_after_dequeue, int64_t seed, int64_t seed2, DataTypeVector types,
    std::vector<PartialShape> shapes) {
  const int32_t cap = capacity < 0 ? kUnbounded : capacity;
  if (min_after_dequeue < 0 || min_after_dequeue >= cap) {
    return absl::InvalidArgumentError(absl::StrCat("RandomShuffleQueue '", name, "': min_after_dequeue (",
                                                   min_after_dequeue, ") must be >= 0 and below the capacity (",
                                                   cap, ")"));
  }
  uint64_t s;
  if (seed == 0 && seed2 == 0) {
    s = std::random_device()();
    s = (s << 32) ^ std::random_device()();
  } else {
    s = static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(seed2);
  }
  return std::make_shared<RandomShuffleQueue>(std::move(name), capacity, min_after_dequeue, s, std::move(types),
                                              std::move(shapes));
}

RandomShuffleQueue::RandomShuffleQueue(std::string name, int32_t capacity, int32_t min_after_dequeue, uint64_t seed,
                                       DataTypeVector types, std::vector<PartialShape> shapes)
    : QueueBase(std::move(name), capacity, std::move(types), std::move(shapes)),
      min_after_dequeue_(min_after_dequeue),
      rng_(seed) {}

QueueBase::Slot RandomShuffleQueue::PopLocked() {
  std::uniform_int_distribution<size_t> pick(0, elements_.size() - 1);
  size_t i = pick(rng_);
  std::swap(elements_[i], elements_.back());
  Slot t = elements_.back();
  elements_.pop_back();
  return t;
}

}  // namespace sluice
