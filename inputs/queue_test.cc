// Queue semantics through the C++ API: blocking and wake-up, close with and
// without cancelling pending enqueues, min_after_dequeue, seeded shuffling
// (reproducible, roughly uniform), cancellation, padding, and a 4-producer /
// 2-consumer stress run that checks no id is lost or duplicated.
#include <atomic>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "inputs/fifo_queue.h"

namespace sluice {
namespace {

using Tuple = QueueBase::Tuple;

Tuple Id(int64_t v) { return {Tensor::Scalar<int64_t>(v)}; }

// Records the outcome of an async call.
struct Result {
  std::atomic<bool> done{false};
  absl::Status status;
  Tuple tuple;
  QueueBase::DoneCallback OnDone() {
    return [this](const absl::Status& s) {
      status = s;
      done = true;
    };
  }
  QueueBase::DequeueCallback OnDequeue() {
    return [this](const absl::Status& s, Tuple t) {
      status = s;
      tuple = std::move(t);
      done = true;
    };
  }
};

std::shared_ptr<FIFOQueue> Fifo(int capacity) {
  return std::make_shared<FIFOQueue>("q", capacity, DataTypeVector{DT_INT64}, std::vector<PartialShape>{PartialShape::Scalar()});
}

absl::Status Enqueue(QueueBase* q, int64_t v) {
  absl::Notification n;
  absl::Status out;
  q->TryEnqueue(Id(v), nullptr, [&](const absl::Status& s) {
    out = s;
    n.Notify();
  });
  n.WaitForNotification();
  return out;
}

absl::StatusOr<int64_t> Dequeue(QueueBase* q) {
  Result r;
  q->TryDequeue(nullptr, r.OnDequeue());
  EXPECT_TRUE(r.done) << "the queue has elements or is closed, so this must not wait";
  if (!r.status.ok()) return r.status;
  return r.tuple[0].scalar<int64_t>();
}

TEST(FIFOQueue, FirstInFirstOut) {
  auto q = Fifo(10);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Enqueue(q.get(), i).ok());
  EXPECT_EQ(q->Size(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(*Dequeue(q.get()), i);
}

TEST(FIFOQueue, EnqueueWaitsForRoomAndDequeueWakesIt) {
  auto q = Fifo(2);
  ASSERT_TRUE(Enqueue(q.get(), 1).ok());
  ASSERT_TRUE(Enqueue(q.get(), 2).ok());
  Result blocked;
  q->TryEnqueue(Id(3), nullptr, blocked.OnDone());
  EXPECT_FALSE(blocked.done);
  EXPECT_EQ(q->Size(), 2);
  EXPECT_EQ(*Dequeue(q.get()), 1);
  EXPECT_TRUE(blocked.done);
  EXPECT_TRUE(blocked.status.ok());
  EXPECT_EQ(*Dequeue(q.get()), 2);
  EXPECT_EQ(*Dequeue(q.get()), 3);
}

TEST(FIFOQueue, DequeueWaitsForAnElementAndEnqueueWakesIt) {
  auto q = Fifo(2);
  Result waiting;
  q->TryDequeue(nullptr, waiting.OnDequeue());
  EXPECT_FALSE(waiting.done);
  ASSERT_TRUE(Enqueue(q.get(), 42).ok());
  ASSERT_TRUE(waiting.done);
  EXPECT_EQ(waiting.tuple[0].scalar<int64_t>(), 42);
  EXPECT_EQ(q->Size(), 0);
}

TEST(FIFOQueue, WakesAcrossThreads) {
  auto q = Fifo(1);
  std::thread consumer([&] {
    for (int i = 0; i < 100; ++i) {
      absl::Notification n;
      int64_t got = -1;
      q->TryDequeue(nullptr, [&](const absl::Status& s, Tuple t) {
        if (s.ok()) got = t[0].scalar<int64_t>();
        n.Notify();
      });
      n.WaitForNotification();
      EXPECT_EQ(got, i);
    }
  });
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(Enqueue(q.get(), i).ok());
  consumer.join();
}

TEST(FIFOQueue, CloseLetsPendingEnqueuesFinishThenRejectsNewOnes) {
  auto q = Fifo(1);
  ASSERT_TRUE(Enqueue(q.get(), 1).ok());
  Result pending, closed;
  q->TryEnqueue(Id(2), nullptr, pending.OnDone());
  q->Close(false, closed.OnDone());
  EXPECT_FALSE(closed.done) << "close waits behind the pending enqueue";
  EXPECT_FALSE(q->IsClosed());
  EXPECT_EQ(*Dequeue(q.get()), 1);
  EXPECT_TRUE(pending.done);
  EXPECT_TRUE(pending.status.ok());
  EXPECT_TRUE(closed.done);
  EXPECT_TRUE(q->IsClosed());
  Result late;
  q->TryEnqueue(Id(3), nullptr, late.OnDone());
  ASSERT_TRUE(late.done);
  EXPECT_TRUE(absl::IsCancelled(late.status)) << late.status;
  EXPECT_EQ(*Dequeue(q.get()), 2);
  EXPECT_TRUE(absl::IsOutOfRange(Dequeue(q.get()).status()));
}

TEST(FIFOQueue, CloseWithCancelFailsPendingEnqueues) {
  auto q = Fifo(1);
  ASSERT_TRUE(Enqueue(q.get(), 1).ok());
  Result pending, closed;
  q->TryEnqueue(Id(2), nullptr, pending.OnDone());
  q->Close(true, closed.OnDone());
  ASSERT_TRUE(pending.done);
  EXPECT_TRUE(absl::IsCancelled(pending.status)) << pending.status;
  EXPECT_TRUE(closed.done);
  EXPECT_EQ(*Dequeue(q.get()), 1);
  EXPECT_TRUE(absl::IsOutOfRange(Dequeue(q.get()).status()));
}

TEST(FIFOQueue, CloseWakesWaitingDequeuesWithOutOfRange) {
  auto q = Fifo(5);
  Result waiting;
  q->TryDequeue(nullptr, waiting.OnDequeue());
  Result closed;
  q->Close(false, closed.OnDone());
  ASSERT_TRUE(waiting.done);
  EXPECT_TRUE(absl::IsOutOfRange(waiting.status)) << waiting.status;
}

TEST(FIFOQueue, DequeueManyOnAClosedQueueRestoresElements) {
  auto q = Fifo(10);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Enqueue(q.get(), i).ok());
  Result many;
  q->TryDequeueMany(5, false, nullptr, many.OnDequeue());
  EXPECT_FALSE(many.done);
  Result closed;
  q->Close(false, closed.OnDone());
  ASSERT_TRUE(many.done);
  EXPECT_TRUE(absl::IsOutOfRange(many.status)) << many.status;
  EXPECT_EQ(q->Size(), 3) << "the elements it had taken went back";
  Result up_to;
  q->TryDequeueMany(5, true, nullptr, up_to.OnDequeue());
  ASSERT_TRUE(up_to.done);
  ASSERT_TRUE(up_to.status.ok()) << up_to.status;
  ASSERT_EQ(up_to.tuple[0].NumElements(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(up_to.tuple[0].data<int64_t>()[i], i);
}

TEST(FIFOQueue, ManyLargerThanCapacityStreamsThrough) {
  auto q = Fifo(3);
  std::vector<int64_t> ids(10);
  for (int i = 0; i < 10; ++i) ids[i] = i;
  Result enq, deq;
  q->TryEnqueueMany({Tensor::FromVector<int64_t>(ids)}, nullptr, enq.OnDone());
  EXPECT_FALSE(enq.done);
  q->TryDequeueMany(10, false, nullptr, deq.OnDequeue());
  ASSERT_TRUE(enq.done && deq.done);
  ASSERT_TRUE(deq.status.ok()) << deq.status;
  ASSERT_EQ(deq.tuple[0].shape(), TensorShape({10}));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(deq.tuple[0].data<int64_t>()[i], i);
}

TEST(FIFOQueue, RejectsWrongTypesAndShapes) {
  auto q = Fifo(3);
  Result r;
  q->TryEnqueue({Tensor::Scalar<float>(1)}, nullptr, r.OnDone());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status)) << r.status;
  Result r2;
  q->TryEnqueue({Tensor::FromVector<int64_t>({1, 2})}, nullptr, r2.OnDone());
  EXPECT_TRUE(absl::IsInvalidArgument(r2.status)) << r2.status;
  Result r3;
  q->TryEnqueueMany({Tensor::Scalar<int64_t>(1)}, nullptr, r3.OnDone());
  EXPECT_TRUE(absl::IsInvalidArgument(r3.status)) << r3.status;
}

TEST(QueueCancellation, CancelledDequeueFailsAndRestoresWhatItTook) {
  auto q = Fifo(10);
  ASSERT_TRUE(Enqueue(q.get(), 7).ok());
  CancellationManager cm;
  Result many;
  q->TryDequeueMany(2, false, &cm, many.OnDequeue());
  EXPECT_FALSE(many.done);
  EXPECT_EQ(q->Size(), 0);
  cm.StartCancel();
  ASSERT_TRUE(many.done);
  EXPECT_TRUE(absl::IsCancelled(many.status)) << many.status;
  EXPECT_EQ(*Dequeue(q.get()), 7);
}

TEST(QueueCancellation, CancelledEnqueueFailsAndAlreadyCancelledFailsAtOnce) {
  auto q = Fifo(1);
  ASSERT_TRUE(Enqueue(q.get(), 1).ok());
  CancellationManager cm;
  Result blocked;
  q->TryEnqueue(Id(2), &cm, blocked.OnDone());
  EXPECT_FALSE(blocked.done);
  cm.StartCancel();
  ASSERT_TRUE(blocked.done);
  EXPECT_TRUE(absl::IsCancelled(blocked.status));
  Result late;
  q->TryDequeue(&cm, late.OnDequeue());
  ASSERT_TRUE(late.done);
  EXPECT_TRUE(absl::IsCancelled(late.status));
  EXPECT_EQ(q->Size(), 1);
}

TEST(QueueCancellation, DestroyingAQueueFailsItsPendingAttempts) {
  Result waiting;
  {
    auto q = Fifo(1);
    q->TryDequeue(nullptr, waiting.OnDequeue());
  }
  ASSERT_TRUE(waiting.done);
  EXPECT_TRUE(absl::IsCancelled(waiting.status));
}

std::shared_ptr<RandomShuffleQueue> Shuffle(int capacity, int min_after, int64_t seed) {
  auto q = RandomShuffleQueue::Create("s", capacity, min_after, seed, 0, {DT_INT64}, {PartialShape::Scalar()});
  EXPECT_TRUE(q.ok()) << q.status();
  return *q;
}

TEST(RandomShuffleQueue, HoldsMinAfterDequeueUntilClosed) {
  auto q = Shuffle(10, 3, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Enqueue(q.get(), i).ok());
  Result waiting;
  q->TryDequeue(nullptr, waiting.OnDequeue());
  EXPECT_FALSE(waiting.done) << "3 elements, min_after_dequeue 3";
  ASSERT_TRUE(Enqueue(q.get(), 3).ok());
  ASSERT_TRUE(waiting.done);
  EXPECT_EQ(q->Size(), 3);
  Result again;
  q->TryDequeue(nullptr, again.OnDequeue());
  EXPECT_FALSE(again.done);
  Result closed;
  q->Close(false, closed.OnDone());
  ASSERT_TRUE(again.done) << "closing releases the last min_after_dequeue elements";
  EXPECT_TRUE(again.status.ok());
  int64_t sum = waiting.tuple[0].scalar<int64_t>() + again.tuple[0].scalar<int64_t>();
  for (int i = 0; i < 2; ++i) sum += *Dequeue(q.get());
  EXPECT_EQ(sum, 0 + 1 + 2 + 3);
  EXPECT_TRUE(absl::IsOutOfRange(Dequeue(q.get()).status()));
}

TEST(RandomShuffleQueue, RejectsMinAfterDequeueAtOrAboveCapacity) {
  EXPECT_TRUE(absl::IsInvalidArgument(RandomShuffleQueue::Create("s", 5, 5, 0, 0, {DT_INT64}, {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(RandomShuffleQueue::Create("s", 5, -1, 0, 0, {DT_INT64}, {}).status()));
}

std::vector<int64_t> DrainOrder(int64_t seed) {
  auto q = Shuffle(100, 0, seed);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(Enqueue(q.get(), i).ok());
  std::vector<int64_t> order;
  for (int i = 0; i < 100; ++i) order.push_back(*Dequeue(q.get()));
  return order;
}

TEST(RandomShuffleQueue, SeededOrderIsReproducibleAndShuffled) {
  std::vector<int64_t> a = DrainOrder(42), b = DrainOrder(42), c = DrainOrder(43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(a, sorted);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);
}

TEST(RandomShuffleQueue, FirstDequeueIsRoughlyUniform) {
  // Chi-square over which of 10 elements comes out first, 20000 rounds.
  constexpr int kBins = 10, kRounds = 20000;
  auto q = Shuffle(kBins, 0, 7);
  std::vector<int> counts(kBins, 0);
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < kBins; ++i) ASSERT_TRUE(Enqueue(q.get(), i).ok());
    counts[*Dequeue(q.get())]++;
    for (int i = 1; i < kBins; ++i) ASSERT_TRUE(Dequeue(q.get()).ok());
  }
  double expected = static_cast<double>(kRounds) / kBins, chi2 = 0;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 27.88) << "chi-square, 9 degrees of freedom, p = 0.001";
}

TEST(PaddingFIFOQueue, PadsEachBatchToItsLargestElement) {
  auto q = PaddingFIFOQueue::Create("p", 10, {DT_INT32, DT_STRING}, {PartialShape{-1}, PartialShape::Scalar()});
  ASSERT_TRUE(q.ok()) << q.status();
  Result e1, e2, d;
  (*q)->TryEnqueue({Tensor::FromVector<int32_t>({1, 2, 3}), Tensor::Scalar<tstring>("a")}, nullptr, e1.OnDone());
  (*q)->TryEnqueue({Tensor::FromVector<int32_t>({4}), Tensor::Scalar<tstring>("b")}, nullptr, e2.OnDone());
  ASSERT_TRUE(e1.status.ok() && e2.status.ok()) << e1.status << e2.status;
  (*q)->TryDequeueMany(2, false, nullptr, d.OnDequeue());
  ASSERT_TRUE(d.done && d.status.ok()) << d.status;
  ASSERT_EQ(d.tuple[0].shape(), TensorShape({2, 3}));
  std::vector<int32_t> got(d.tuple[0].data<int32_t>(), d.tuple[0].data<int32_t>() + 6);
  EXPECT_EQ(got, (std::vector<int32_t>{1, 2, 3, 4, 0, 0}));
  EXPECT_EQ(d.tuple[1].data<tstring>()[1], "b");
  EXPECT_TRUE(absl::IsInvalidArgument(PaddingFIFOQueue::Create("p", 1, {DT_INT32}, {PartialShape()}).status()));
}

TEST(PaddingFIFOQueue, PadsRank2) {
  auto q = PaddingFIFOQueue::Create("p", 10, {DT_FLOAT}, {PartialShape{-1, -1}});
  ASSERT_TRUE(q.ok());
  Result e1, e2, d;
  (*q)->TryEnqueue({Tensor::FromVector<float>({1, 2}, TensorShape({1, 2}))}, nullptr, e1.OnDone());
  (*q)->TryEnqueue({Tensor::FromVector<float>({3, 4}, TensorShape({2, 1}))}, nullptr, e2.OnDone());
  (*q)->TryDequeueMany(2, false, nullptr, d.OnDequeue());
  ASSERT_TRUE(d.status.ok()) << d.status;
  ASSERT_EQ(d.tuple[0].shape(), TensorShape({2, 2, 2}));
  std::vector<float> got(d.tuple[0].data<float>(), d.tuple[0].data<float>() + 8);
  EXPECT_EQ(got, (std::vector<float>{1, 2, 0, 0, 3, 0, 4, 0}));
}

// Issue 22, class 1: batching empty elements can name a shape no tensor may
// have. Four [0, 2^62] elements make [4, 0, 2^62] (the product of the
// non-zero dims is 2^64); padding [0, 2^40] and [2^40, 0] makes
// [2, 2^40, 2^40]. Both fail with InvalidArgument naming the queue, where
// building the batch shape used to CHECK.
TEST(FIFOQueue, DequeueManyOfEmptyElementsWithHugeDimsFails) {
  auto q = std::make_shared<FIFOQueue>("huge", 10, DataTypeVector{DT_FLOAT},
                                       std::vector<PartialShape>{PartialShape{0, -1}});
  const Tensor e(DT_FLOAT, TensorShape({0, int64_t{1} << 62}));
  for (int i = 0; i < 4; ++i) {
    Result r;
    q->TryEnqueue({e}, nullptr, r.OnDone());
    ASSERT_TRUE(r.done && r.status.ok()) << r.status;
  }
  Result one;  // a single element is fine: [1, 0, 2^62]
  q->TryDequeueMany(1, false, nullptr, one.OnDequeue());
  ASSERT_TRUE(one.done && one.status.ok()) << one.status;
  EXPECT_EQ(one.tuple[0].shape(), TensorShape({1, 0, int64_t{1} << 62}));
  Result d;
  q->TryDequeueMany(3, false, nullptr, d.OnDequeue());
  ASSERT_TRUE(d.done);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status)) << d.status;
  EXPECT_NE(d.status.message().find("queue 'huge'"), std::string::npos) << d.status;
  EXPECT_NE(d.status.message().find("2^62"), std::string::npos) << d.status;
}

TEST(PaddingFIFOQueue, PaddingEmptyElementsToAHugeShapeFails) {
  auto q = PaddingFIFOQueue::Create("p", 10, {DT_FLOAT}, {PartialShape{-1, -1}});
  ASSERT_TRUE(q.ok());
  const int64_t big = int64_t{1} << 40;
  Result e1, e2, d;
  (*q)->TryEnqueue({Tensor(DT_FLOAT, TensorShape({0, big}))}, nullptr, e1.OnDone());
  (*q)->TryEnqueue({Tensor(DT_FLOAT, TensorShape({big, 0}))}, nullptr, e2.OnDone());
  ASSERT_TRUE(e1.status.ok() && e2.status.ok()) << e1.status << e2.status;
  (*q)->TryDequeueMany(2, false, nullptr, d.OnDequeue());
  ASSERT_TRUE(d.done);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status)) << d.status;
  EXPECT_NE(d.status.message().find("PaddingFIFOQueue 'p'"), std::string::npos) << d.status;
  EXPECT_NE(d.status.message().find("2^62"), std::string::npos) << d.status;
}

// Fixed-shape elements are stored as rows in the queue's own segments and
// gathered into the batch; a string component keeps tuples. Both paths give
// back exactly what went in, across many cycles that reuse freed slots.
TEST(FIFOQueue, FixedShapeRowsAndStringTuplesRoundTrip) {
  for (bool with_string : {false, true}) {
    DataTypeVector types = {DT_FLOAT, DT_INT64};
    std::vector<PartialShape> shapes = {PartialShape{2, 3}, PartialShape::Scalar()};
    if (with_string) {
      types.push_back(DT_STRING);
      shapes.push_back(PartialShape::Scalar());
    }
    auto q = std::make_shared<FIFOQueue>("rows", 50, types, shapes);
    int64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 40; ++round) {
      const int n = 1 + round % 17;
      Tensor f(DT_FLOAT, TensorShape({n, 2, 3}));
      Tensor id(DT_INT64, TensorShape({n}));
      Tensor str(DT_STRING, TensorShape({n}));
      for (int i = 0; i < n; ++i, ++next_in) {
        for (int k = 0; k < 6; ++k) f.data<float>()[i * 6 + k] = static_cast<float>(next_in * 10 + k);
        id.data<int64_t>()[i] = next_in;
        str.data<tstring>()[i] = absl::StrCat("e", next_in);
      }
      Tuple batch = {f, id};
      if (with_string) batch.push_back(str);
      Result e;
      q->TryEnqueueMany(batch, nullptr, e.OnDone());
      ASSERT_TRUE(e.done && e.status.ok()) << e.status;
      // Take them back: alternately one element and a batch of the rest.
      Result one;
      q->TryDequeue(nullptr, one.OnDequeue());
      ASSERT_TRUE(one.done && one.status.ok()) << one.status;
      ASSERT_EQ(one.tuple[0].shape(), TensorShape({2, 3}));
      EXPECT_EQ(one.tuple[0].data<float>()[5], next_out * 10 + 5);
      EXPECT_EQ(one.tuple[1].scalar<int64_t>(), next_out);
      if (with_string) {
        EXPECT_EQ(one.tuple[2].scalar<tstring>(), absl::StrCat("e", next_out));
      }
      ++next_out;
      Result rest;
      q->TryDequeueMany(n - 1, false, nullptr, rest.OnDequeue());
      ASSERT_TRUE(rest.done && rest.status.ok()) << rest.status;
      ASSERT_EQ(rest.tuple[0].shape(), TensorShape({n - 1, 2, 3}));
      for (int i = 0; i < n - 1; ++i, ++next_out) {
        EXPECT_EQ(rest.tuple[0].data<float>()[i * 6], next_out * 10);
        EXPECT_EQ(rest.tuple[0].data<float>()[i * 6 + 4], next_out * 10 + 4);
        EXPECT_EQ(rest.tuple[1].data<int64_t>()[i], next_out);
        if (with_string) {
          EXPECT_EQ(rest.tuple[2].data<tstring>()[i], absl::StrCat("e", next_out));
        }
      }
    }
    EXPECT_EQ(q->Size(), 0);
  }
}

// A shuffle queue of fixed-shape elements keeps each element's components
// together (they live in separate row segments).
TEST(RandomShuffleQueue, RowsKeepComponentsTogether) {
  auto q = RandomShuffleQueue::Create("pairs", 200, 10, 7, 0, {DT_FLOAT, DT_INT64},
                                      {PartialShape{3}, PartialShape::Scalar()});
  ASSERT_TRUE(q.ok());
  std::vector<int> seen(300, 0);
  int64_t next = 0;
  for (int round = 0; round < 10; ++round) {
    Tensor f(DT_FLOAT, TensorShape({30, 3}));
    Tensor id(DT_INT64, TensorShape({30}));
    for (int i = 0; i < 30; ++i, ++next) {
      for (int k = 0; k < 3; ++k) f.data<float>()[i * 3 + k] = static_cast<float>(next + k);
      id.data<int64_t>()[i] = next;
    }
    Result e;
    (*q)->TryEnqueueMany({f, id}, nullptr, e.OnDone());
    ASSERT_TRUE(e.done && e.status.ok()) << e.status;
    Result d;  // leaves more than min_after_dequeue queued
    (*q)->TryDequeueMany(20, false, nullptr, d.OnDequeue());
    ASSERT_TRUE(d.done && d.status.ok()) << d.status;
    for (int64_t i = 0; i < d.tuple[1].NumElements(); ++i) {
      const int64_t v = d.tuple[1].data<int64_t>()[i];
      ASSERT_GE(v, 0);
      ASSERT_LT(v, 300);
      ++seen[v];
      EXPECT_EQ(d.tuple[0].data<float>()[i * 3 + 2], v + 2);
    }
  }
  Result c;
  (*q)->Close(false, c.OnDone());
  while (true) {
    Result d;
    (*q)->TryDequeueMany(1, false, nullptr, d.OnDequeue());
    ASSERT_TRUE(d.done);
    if (!d.status.ok()) break;
    ++seen[d.tuple[1].data<int64_t>()[0]];
  }
  for (int v = 0; v < 300; ++v) EXPECT_EQ(seen[v], 1) << v;
}

TEST(QueueStress, FourProducersTwoConsumersMoveAMillionIds) {
  constexpr int64_t kIds = 1000000;
  constexpr int kProducers = 4;
  auto q = Fifo(1000);
  std::atomic<int64_t> count{0}, sum{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      // Each producer enqueues its share, in batches of up to 100 (EnqueueMany)
      // and single elements alternately.
      int64_t next = p;
      while (next < kIds) {
        std::vector<int64_t> batch;
        for (int k = 0; k < 100 && next < kIds; ++k, next += kProducers) batch.push_back(next);
        absl::Notification n;
        absl::Status st;
        if (batch.size() == 1 || (batch[0] / kProducers) % 2 == 0) {
          for (int64_t id : batch) ASSERT_TRUE(Enqueue(q.get(), id).ok());
          continue;
        }
        q->TryEnqueueMany({Tensor::FromVector<int64_t>(batch)}, nullptr, [&](const absl::Status& s) {
          st = s;
          n.Notify();
        });
        n.WaitForNotification();
        ASSERT_TRUE(st.ok()) << st;
      }
    });
  }
  std::vector<std::thread> consumers;
  std::vector<std::vector<char>> seen(2, std::vector<char>(kIds, 0));
  for (int c = 0; c < 2; ++c) {
    consumers.emplace_back([&, c] {
      while (true) {
        absl::Notification n;
        absl::Status st;
        Tuple t;
        q->TryDequeueMany(64, true, nullptr, [&](const absl::Status& s, Tuple got) {
          st = s;
          t = std::move(got);
          n.Notify();
        });
        n.WaitForNotification();
        if (absl::IsOutOfRange(st)) return;
        ASSERT_TRUE(st.ok()) << st;
        const int64_t* ids = t[0].data<int64_t>();
        for (int64_t i = 0; i < t[0].NumElements(); ++i) {
          ASSERT_GE(ids[i], 0);
          ASSERT_LT(ids[i], kIds);
          seen[c][ids[i]]++;
          sum += ids[i];
        }
        count += t[0].NumElements();
      }
    });
  }
  for (auto& t : threads) t.join();
  absl::Notification closed;
  q->Close(false, [&](const absl::Status&) { closed.Notify(); });
  closed.WaitForNotification();
  for (auto& t : consumers) t.join();
  EXPECT_EQ(count.load(), kIds);
  EXPECT_EQ(sum.load(), kIds * (kIds - 1) / 2);
  int64_t duplicates = 0, missing = 0;
  for (int64_t i = 0; i < kIds; ++i) {
    int n = seen[0][i] + seen[1][i];
    if (n == 0) ++missing;
    if (n > 1) ++duplicates;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(duplicates, 0);
}

}  // namespace
}  // namespace sluice
