// Spec for ResourceMgr containers (whitepaper §4.7) and the per-step
// CancellationManager: resources are created once per (container, name) even
// under concurrency, are typed, and outlive Cleanup while in use; cancellation
// callbacks run exactly once and never after deregistration.
#include "engine/framework/resource_mgr.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/barrier.h"
#include "engine/framework/cancellation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// A resource that counts its live instances and remembers a label.
class Counter : public ResourceBase {
 public:
  explicit Counter(std::string label, std::atomic<int>* live = nullptr) : label_(std::move(label)), live_(live) {
    if (live_) live_->fetch_add(1);
  }
  ~Counter() override {
    if (live_) live_->fetch_sub(1);
  }
  std::string DebugString() const override { return "Counter " + label_; }
  const std::string& label() const { return label_; }
  std::atomic<int> value{0};

 private:
  std::string label_;
  std::atomic<int>* live_;
};

class Other : public ResourceBase {
 public:
  std::string DebugString() const override { return "Other"; }
};

// A creator that counts its calls.
std::function<absl::StatusOr<std::shared_ptr<Counter>>()> MakeCounter(const std::string& label,
                                                                      std::atomic<int>* calls,
                                                                      std::atomic<int>* live = nullptr) {
  return [label, calls, live]() -> absl::StatusOr<std::shared_ptr<Counter>> {
    calls->fetch_add(1);
    return std::make_shared<Counter>(label, live);
  };
}

TEST(ResourceMgr, DefaultContainerIsLocalhost) {
  EXPECT_STREQ(ResourceMgr::kDefaultContainer, "localhost");
}

TEST(ResourceMgr, LookupOrCreateCreatesOnce) {
  ResourceMgr rm;
  std::atomic<int> calls{0};
  auto first = rm.LookupOrCreate<Counter>("c", "v", MakeCounter("first", &calls));
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = rm.LookupOrCreate<Counter>("c", "v", MakeCounter("second", &calls));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ((*second)->label(), "first");
  EXPECT_EQ(rm.NumResources(), 1);
  auto looked_up = rm.Lookup<Counter>("c", "v");
  ASSERT_TRUE(looked_up.ok());
  EXPECT_EQ(looked_up->get(), first->get());
}

TEST(ResourceMgr, DeleteRemovesOneResourceItsUsersKeepAlive) {
  ResourceMgr rm;
  std::atomic<int> calls{0};
  auto held = rm.LookupOrCreate<Counter>("c", "v", MakeCounter("first", &calls));
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_TRUE(rm.LookupOrCreate<Counter>("c", "w", MakeCounter("other", &calls)).ok());
  EXPECT_EQ(rm.Delete<VariableResource>("c", "v").code(), absl::StatusCode::kNotFound);  // another type
  ASSERT_TRUE(rm.Delete<Counter>("c", "v").ok());
  EXPECT_EQ(rm.Lookup<Counter>("c", "v").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*held)->label(), "first");  // still alive for its holder
  EXPECT_EQ(rm.NumResources(), 1);
  EXPECT_EQ(rm.Delete<Counter>("c", "v").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(rm.Delete<Counter>("nowhere", "v").code(), absl::StatusCode::kNotFound);
}

TEST(ResourceMgr, ConcurrentLookupOrCreateCallsTheCreatorOnce) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 20; ++round) {
    ResourceMgr rm;
    std::atomic<int> calls{0};
    absl::Barrier* start = new absl::Barrier(kThreads);  // deleted by the last thread through Block()
    std::vector<Counter*> got(kThreads, nullptr);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        if (start->Block()) delete start;
        auto r = rm.LookupOrCreate<Counter>("c", "shared", [&]() -> absl::StatusOr<std::shared_ptr<Counter>> {
          calls.fetch_add(1);
          std::this_thread::yield();  // widen the window for a second creator
          return std::make_shared<Counter>("t" + std::to_string(i));
        });
        if (r.ok()) got[i] = r->get();
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(calls.load(), 1) << "round " << round;
    ASSERT_NE(got[0], nullptr);
    for (int i = 1; i < kThreads; ++i) EXPECT_EQ(got[i], got[0]) << "thread " << i;
    EXPECT_EQ(rm.NumResources(), 1);
  }
}

TEST(ResourceMgr, SameNameInDifferentContainersIsDifferentResources) {
  ResourceMgr rm;
  std::atomic<int> calls{0};
  auto a = rm.LookupOrCreate<Counter>("a", "v", MakeCounter("a", &calls));
  auto b = rm.LookupOrCreate<Counter>("b", "v", MakeCounter("b", &calls));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->get(), b->get());
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(rm.NumResources(), 2);
}

TEST(ResourceMgr, TypeMismatchIsInvalidArgument) {
  ResourceMgr rm;
  std::atomic<int> calls{0};
  ASSERT_TRUE(rm.LookupOrCreate<Counter>("c", "v", MakeCounter("x", &calls)).ok());
  bool other_created = false;
  auto wrong = rm.LookupOrCreate<Other>("c", "v", [&]() -> absl::StatusOr<std::shared_ptr<Other>> {
    other_created = true;
    return std::make_shared<Other>();
  });
  ASSERT_FALSE(wrong.ok());
  EXPECT_FALSE(other_created);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("c/v exists with another type"));
  EXPECT_THAT(wrong.status().message(), HasSubstr("Counter x"));
  // Lookup of the wrong type finds nothing; the right type is untouched.
  EXPECT_EQ(rm.Lookup<Other>("c", "v").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(rm.Lookup<Counter>("c", "v").ok());
}

TEST(ResourceMgr, CreatorErrorsPropagateAndStoreNothing) {
  ResourceMgr rm;
  auto failed = rm.LookupOrCreate<Counter>("c", "v", []() -> absl::StatusOr<std::shared_ptr<Counter>> {
    return absl::ResourceExhaustedError("no room");
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(rm.NumResources(), 0);
  std::atomic<int> calls{0};
  EXPECT_TRUE(rm.LookupOrCreate<Counter>("c", "v", MakeCounter("retry", &calls)).ok());
  EXPECT_EQ(calls.load(), 1);
}

TEST(ResourceMgr, LookupOfAMissingResourceIsNotFound) {
  ResourceMgr rm;
  auto r = rm.Lookup<Counter>("nowhere", "nothing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("nowhere/nothing"));
}

TEST(ResourceMgr, CleanupDropsOneContainerAndLeavesTheOthers) {
  ResourceMgr rm;
  std::atomic<int> calls{0}, live{0};
  ASSERT_TRUE(rm.LookupOrCreate<Counter>("a", "x", MakeCounter("ax", &calls, &live)).ok());
  ASSERT_TRUE(rm.LookupOrCreate<Counter>("a", "y", MakeCounter("ay", &calls, &live)).ok());
  ASSERT_TRUE(rm.LookupOrCreate<Counter>("b", "x", MakeCounter("bx", &calls, &live)).ok());
  EXPECT_THAT(rm.Containers(), UnorderedElementsAre("a", "b"));
  EXPECT_EQ(live.load(), 3);

  rm.Cleanup("a");
  EXPECT_EQ(live.load(), 1);  // nobody held a's resources
  EXPECT_THAT(rm.Containers(), UnorderedElementsAre("b"));
  EXPECT_EQ(rm.NumResources(), 1);
  EXPECT_EQ(rm.Lookup<Counter>("a", "x").status().code(), absl::StatusCode::kNotFound);
  auto bx = rm.Lookup<Counter>("b", "x");
  ASSERT_TRUE(bx.ok());
  EXPECT_EQ((*bx)->label(), "bx");

  rm.Cleanup("never-existed");
  EXPECT_EQ(rm.NumResources(), 1);
}

TEST(ResourceMgr, ResourcesInUseSurviveCleanupUntilReleased) {
  ResourceMgr rm;
  std::atomic<int> calls{0}, live{0};
  auto held = rm.LookupOrCreate<Counter>("c", "v", MakeCounter("old", &calls, &live));
  ASSERT_TRUE(held.ok());
  std::shared_ptr<Counter> user = *held;
  held = absl::StatusOr<std::shared_ptr<Counter>>();  // keep only `user`

  rm.Cleanup("c");
  EXPECT_EQ(live.load(), 1);  // still alive: `user` holds it
  user->value.fetch_add(5);   // and usable
  EXPECT_EQ(user->value.load(), 5);

  // The name is free again: a new lookup creates a fresh resource.
  auto fresh = rm.LookupOrCreate<Counter>("c", "v", MakeCounter("new", &calls, &live));
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->get(), user.get());
  EXPECT_EQ((*fresh)->label(), "new");
  EXPECT_EQ(live.load(), 2);

  user.reset();
  EXPECT_EQ(live.load(), 1);  // the old one died with its last user
}

TEST(ResourceMgr, VariableResourceDebugStringShowsItsTensor) {
  VariableResource v(DT_FLOAT);
  *v.tensor() = Tensor::FromVector<float>({1, 2});
  EXPECT_EQ(v.DebugString(), "Variable of float Tensor<float, [2]: 1 2>");
}

// ---- CancellationManager ----

TEST(CancellationManager, TokensAreUnique) {
  CancellationManager cm;
  CancellationManager::Token a = cm.NewToken(), b = cm.NewToken();
  EXPECT_NE(a, b);
}

TEST(CancellationManager, StartCancelRunsEachCallbackOnce) {
  CancellationManager cm;
  int ran_a = 0, ran_b = 0;
  EXPECT_TRUE(cm.RegisterCallback(cm.NewToken(), [&] { ++ran_a; }));
  EXPECT_TRUE(cm.RegisterCallback(cm.NewToken(), [&] { ++ran_b; }));
  EXPECT_FALSE(cm.IsCancelled());
  cm.StartCancel();
  EXPECT_TRUE(cm.IsCancelled());
  EXPECT_EQ(ran_a, 1);
  EXPECT_EQ(ran_b, 1);
  cm.StartCancel();
  EXPECT_EQ(ran_a, 1);
  EXPECT_EQ(ran_b, 1);
}

TEST(CancellationManager, RegisterAfterCancelReturnsFalseAndNeverRuns) {
  CancellationManager cm;
  cm.StartCancel();
  int ran = 0;
  CancellationManager::Token t = cm.NewToken();
  EXPECT_FALSE(cm.RegisterCallback(t, [&] { ++ran; }));
  cm.StartCancel();
  EXPECT_EQ(ran, 0);
  EXPECT_FALSE(cm.DeregisterCallback(t));
}

TEST(CancellationManager, DeregisteredCallbacksDoNotRun) {
  CancellationManager cm;
  int ran_kept = 0, ran_dropped = 0;
  CancellationManager::Token kept = cm.NewToken(), dropped = cm.NewToken();
  ASSERT_TRUE(cm.RegisterCallback(kept, [&] { ++ran_kept; }));
  ASSERT_TRUE(cm.RegisterCallback(dropped, [&] { ++ran_dropped; }));
  EXPECT_TRUE(cm.DeregisterCallback(dropped));
  EXPECT_FALSE(cm.DeregisterCallback(dropped));  // already gone
  cm.StartCancel();
  EXPECT_EQ(ran_kept, 1);
  EXPECT_EQ(ran_dropped, 0);
}

TEST(CancellationManager, DeregisterAfterTheCallbackRanReturnsFalse) {
  CancellationManager cm;
  CancellationManager::Token t = cm.NewToken();
  int ran = 0;
  ASSERT_TRUE(cm.RegisterCallback(t, [&] { ++ran; }));
  cm.StartCancel();
  EXPECT_EQ(ran, 1);
  EXPECT_FALSE(cm.DeregisterCallback(t));
}

TEST(CancellationManager, DeregisterOfAnUnknownTokenReturnsFalse) {
  CancellationManager cm;
  EXPECT_FALSE(cm.DeregisterCallback(cm.NewToken()));
}

TEST(CancellationManager, CallbacksRunWithoutTheLockHeld) {
  // A callback that touches the manager itself must not deadlock.
  CancellationManager cm;
  CancellationManager::Token other = cm.NewToken();
  bool register_result = true, deregister_result = true;
  ASSERT_TRUE(cm.RegisterCallback(cm.NewToken(), [&] {
    register_result = cm.RegisterCallback(cm.NewToken(), [] {});
    deregister_result = cm.DeregisterCallback(other);
  }));
  cm.StartCancel();
  EXPECT_FALSE(register_result);
  EXPECT_FALSE(deregister_result);
}

TEST(CancellationManager, ConcurrentStartCancelRunsEachCallbackOnce) {
  constexpr int kThreads = 8;
  constexpr int kCallbacks = 100;
  for (int round = 0; round < 20; ++round) {
    CancellationManager cm;
    std::vector<std::atomic<int>> runs(kCallbacks);
    for (int i = 0; i < kCallbacks; ++i) {
      ASSERT_TRUE(cm.RegisterCallback(cm.NewToken(), [&runs, i] { runs[i].fetch_add(1); }));
    }
    absl::Barrier* start = new absl::Barrier(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        if (start->Block()) delete start;
        cm.StartCancel();
      });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < kCallbacks; ++i) EXPECT_EQ(runs[i].load(), 1) << "callback " << i;
  }
}

}  // namespace
}  // namespace sluice
