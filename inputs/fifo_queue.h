// The three queue kinds over QueueBase (whitepaper §4.6):
//  FIFOQueue          first in, first out.
//  PaddingFIFOQueue   FIFO whose DequeueMany pads each component to the
//                     largest shape in the batch (zeros / empty strings);
//                     shapes may have unknown (-1) dims, ranks must be known.
//  RandomShuffleQueue dequeues a uniformly random element, only while more
//                     than min_after_dequeue remain (or the queue is closed);
//                     a nonzero seed or seed2 makes the order reproducible.
// Thread safety: as QueueBase.
#ifndef SLUICE_INPUTS_FIFO_QUEUE_H_
#define SLUICE_INPUTS_FIFO_QUEUE_H_

#include <deque>
#include <random>

#include "inputs/queue_base.h"

namespace sluice {

class FIFOQueue : public QueueBase {
 public:
  using QueueBase::QueueBase;
  absl::string_view kind() const override { return "FIFOQueue"; }

 protected:
  size_t SizeLocked() const override { return queue_.size(); }
  void PushLocked(Slot element) override { queue_.push_back(element); }
  Slot PopLocked() override {
    Slot t = queue_.front();
    queue_.pop_front();
    return t;
  }
  void RestoreLocked(std::vector<Slot> elements) override {
    for (auto it = elements.rbegin(); it != elements.rend(); ++it) queue_.push_front(*it);
  }

 private:
  std::deque<Slot> queue_;
};

class PaddingFIFOQueue : public FIFOQueue {
 public:
  // REQUIRES: one shape of known rank per component (Create checks).
  static absl::StatusOr<std::shared_ptr<PaddingFIFOQueue>> Create(std::string name, int32_t capacity,
                                                                  DataTypeVector types,
                                                                  std::vector<PartialShape> shapes);
  using FIFOQueue::FIFOQueue;
  absl::string_view kind() const override { return "PaddingFIFOQueue"; }

 protected:
  absl::StatusOr<Tensor> BatchComponent(const std::vector<Tuple>& elements, int c) const override;
};

class RandomShuffleQueue : public QueueBase {
 public:
  // InvalidArgument unless 0 <= min_after_dequeue < capacity.
  static absl::StatusOr<std::shared_ptr<RandomShuffleQueue>> Create(std::string name, int32_t capacity,
                                                                    int32_t min_after_dequeue, int64_t seed,
                                                                    int64_t seed2, DataTypeVector types,
                                                                    std::vector<PartialShape> shapes);
  RandomShuffleQueue(std::string name, int32_t capacity, int32_t min_after_dequeue, uint64_t seed,
                     DataTypeVector types, std::vector<PartialShape> shapes);
  absl::string_view kind() const override { return "RandomShuffleQueue"; }
  int32_t min_after_dequeue() const { return min_after_dequeue_; }

 protected:
  size_t SizeLocked() const override { return elements_.size(); }
  void PushLocked(Slot element) override { elements_.push_back(element); }
  Slot PopLocked() override;
  bool CanPopLocked() const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_locked() ? !elements_.empty() : elements_.size() > static_cast<size_t>(min_after_dequeue_);
  }
  void RestoreLocked(std::vector<Slot> elements) override {
    for (Slot e : elements) elements_.push_back(e);
  }

 private:
  const int32_t min_after_dequeue_;
  std::vector<Slot> elements_;
  std::mt19937_64 rng_;
};

}  // namespace sluice

#endif  // SLUICE_INPUTS_FIFO_QUEUE_H_
