// ThreadSanitizer builds only (--config=tsan; third_party/BUILD links this
// into every target that uses absl): tells TSan the ordering that absl's
// synchronization gives. Debian's libabsl_synchronization is built without
// TSan's annotations, so TSan saw nothing of an absl::Mutex, CondVar,
// Notification, BlockingCounter or Barrier, and reported the accesses they
// order as data races (a flag written and read under one Mutex; a Condition
// that another thread's Unlock evaluates).
//
// Each function below is defined under the library's own (mangled) name, so
// the dynamic linker binds callers to it ahead of the library. It calls the
// library's function (dlsym RTLD_NEXT) and records a release on the object
// before it lets go of it and an acquire after it gets it: what the
// library's annotations would have recorded. Inline parts of absl
// (Notification::HasBeenNotified) are not covered: an access ordered only by
// them may still be reported.
// Also: absl::Status's payload reference count (the same blind spot), absl's
// own deadlock detection turned off (its lock graph is guarded the same
// unseen way; TSan finds lock-order inversions itself), and suppressions for
// what other uninstrumented libraries do among their own threads.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "absl/base/options.h"
#include "absl/status/status.h"
#include "absl/synchronization/barrier.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

#define SLUICE_STRINGIFY_INNER(x) #x
#define SLUICE_STRINGIFY(x) SLUICE_STRINGIFY_INNER(x)

// The library's function whose mangled name, after "_ZN4absl<inline
// namespace>" ("_ZNK..." for a const member function), is `rest`; aborts when
// the library has none (another absl version: this file's names need updating).
template <typename Fn>
Fn Next(const char* rest, bool const_member = false) {
  const char* ns = SLUICE_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name =
      std::string(const_member ? "_ZNK4absl" : "_ZN4absl") + std::to_string(std::strlen(ns)) + ns + rest;
  void* f = dlsym(RTLD_NEXT, name.c_str());
  if (f == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: no %s in the absl libraries\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

// A condition that the library evaluates with the mutex held (on the waiting
// thread inside Await or LockWhen, or on an unlocking thread): the acquire
// that the evaluation needs comes before it, not only after the call returns,
// and a release after it.
// The waiter publishes `guarded` with a release on its address before it
// calls the library, and the Condition around it is made and read by the
// library's own (uninstrumented) code: Condition(bool (*)(void*), void*).
struct AcquireThenEval {
  const absl::Condition* cond;
  absl::Mutex* mu;
};

bool EvalGuarded(void* arg) {
  __tsan_acquire(arg);  // the waiter's release of its AcquireThenEval
  auto* self = static_cast<AcquireThenEval*>(arg);
  __tsan_acquire(self->mu);
  const bool met = self->cond->Eval();
  // The library lets go of the mutex after a false evaluation without an
  // Unlock call: the evaluation's reads come before the next holder's writes.
  __tsan_release(self->mu);
  return met;
}

// Whether the caller holds the mutex when it calls the library's wait.
enum MutexOnEntry { kNotHeld, kHeld };

// Calls the library's LockWhen or Await variant `next` with `cond` wrapped
// in EvalGuarded: publishes the wrapper to the thread that evaluates it,
// releases the mutex first where the caller held it (Await lets go of it
// while it waits), and acquires it after the call, which returns with the
// mutex held. `extra`: the timeout or deadline.
template <typename Result, typename... Extra>
Result CallWithGuardedCondition(Result (*next)(absl::Mutex*, const absl::Condition&, Extra...), absl::Mutex* mu,
                                const absl::Condition& cond, MutexOnEntry on_entry, Extra... extra) {
  AcquireThenEval guarded{&cond, mu};
  __tsan_release(&guarded);  // to the thread that evaluates it
  if (on_entry == kHeld) __tsan_release(mu);
  if constexpr (std::is_void_v<Result>) {
    next(mu, absl::Condition(&EvalGuarded, &guarded), extra...);
    __tsan_acquire(mu);
  } else {
    const Result met = next(mu, absl::Condition(&EvalGuarded, &guarded), extra...);
    __tsan_acquire(mu);  // held either way
    return met;
  }
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// ---- Mutex: acquire after locking, release before unlocking ----

void Mutex::Lock() {
  static const auto next = Next<void (*)(Mutex*)>("5Mutex4LockEv");
  next(this);
  __tsan_acquire(this);
}

void Mutex::ReaderLock() {
  static const auto next = Next<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  next(this);
  __tsan_acquire(this);
}

bool Mutex::TryLock() {
  static const auto next = Next<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  const bool locked = next(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  static const auto next = Next<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  const bool locked = next(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::Unlock() {
  static const auto next = Next<void (*)(Mutex*)>("5Mutex6UnlockEv");
  __tsan_release(this);
  next(this);
}

void Mutex::ReaderUnlock() {
  static const auto next = Next<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  __tsan_release(this);
  next(this);
}

// The LockWhen and Await families: the library evaluates `cond` through
// EvalGuarded, and the mutex is held on return whether or not the condition
// was met (the timeout and deadline variants return whether it was).

void Mutex::LockWhen(const Condition& cond) {
  static const auto next = Next<void (*)(Mutex*, const Condition&)>("5Mutex8LockWhenERKNS0_9ConditionE");
  CallWithGuardedCondition(next, this, cond, kNotHeld);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static const auto next = Next<void (*)(Mutex*, const Condition&)>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  CallWithGuardedCondition(next, this, cond, kNotHeld);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto next =
      Next<bool (*)(Mutex*, const Condition&, Duration)>("5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return CallWithGuardedCondition(next, this, cond, kNotHeld, timeout);
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto next =
      Next<bool (*)(Mutex*, const Condition&, Time)>("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return CallWithGuardedCondition(next, this, cond, kNotHeld, deadline);
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto next = Next<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return CallWithGuardedCondition(next, this, cond, kNotHeld, timeout);
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto next = Next<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return CallWithGuardedCondition(next, this, cond, kNotHeld, deadline);
}

// Await lets go of the mutex while it waits and holds it again on return.
void Mutex::Await(const Condition& cond) {
  static const auto next = Next<void (*)(Mutex*, const Condition&)>("5Mutex5AwaitERKNS0_9ConditionE");
  CallWithGuardedCondition(next, this, cond, kHeld);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const auto next =
      Next<bool (*)(Mutex*, const Condition&, Duration)>("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return CallWithGuardedCondition(next, this, cond, kHeld, timeout);
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const auto next =
      Next<bool (*)(Mutex*, const Condition&, Time)>("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return CallWithGuardedCondition(next, this, cond, kHeld, deadline);
}

// ---- CondVar: the wait releases and re-acquires the caller's mutex ----

void CondVar::Wait(Mutex* mu) {
  static const auto next = Next<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  next(this, mu);
  __tsan_acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static const auto next =
      Next<bool (*)(CondVar*, Mutex*, Duration)>("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  const bool timed_out = next(this, mu, timeout);
  __tsan_acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto next =
      Next<bool (*)(CondVar*, Mutex*, Time)>("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  const bool timed_out = next(this, mu, deadline);
  __tsan_acquire(mu);
  return timed_out;
}

// ---- Notification, BlockingCounter, Barrier ----

void Notification::Notify() {
  static const auto next = Next<void (*)(Notification*)>("12Notification6NotifyEv");
  __tsan_release(this);
  next(this);
}

void Notification::WaitForNotification() const {
  static const auto next = Next<void (*)(const Notification*)>("12Notification19WaitForNotificationEv", true);
  next(this);
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static const auto next = Next<bool (*)(const Notification*, Duration)>(
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE", true);
  const bool notified = next(this, timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static const auto next = Next<bool (*)(const Notification*, Time)>(
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE", true);
  const bool notified = next(this, deadline);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool BlockingCounter::DecrementCount() {
  static const auto next = Next<bool (*)(BlockingCounter*)>("15BlockingCounter14DecrementCountEv");
  __tsan_release(this);
  return next(this);
}

void BlockingCounter::Wait() {
  static const auto next = Next<void (*)(BlockingCounter*)>("15BlockingCounter4WaitEv");
  next(this);
  __tsan_acquire(this);
}

bool Barrier::Block() {
  static const auto next = Next<bool (*)(Barrier*)>("7Barrier5BlockEv");
  __tsan_release(this);
  const bool last = next(this);
  __tsan_acquire(this);
  return last;
}

// ---- Status: its payload's reference count ----

// The last Unref deletes the payload; every Unref before it ended its
// thread's use of it (the count's atomics are in the library, unseen).
void Status::UnrefNonInlined(uintptr_t rep) {
  static const auto next = Next<void (*)(uintptr_t)>("6Status15UnrefNonInlinedEm");
  void* const key = reinterpret_cast<void*>(rep);
  __tsan_release(key);
  __tsan_acquire(key);
  next(rep);
}

ABSL_NAMESPACE_END
}  // namespace absl

namespace {

// absl's own deadlock detection (on in this library build) keeps its lock
// graph under a spin lock TSan cannot see, and TSan detects lock-order
// inversions itself.
const bool kAbslDeadlockDetectionOff = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();

}  // namespace

// TSan's built-in suppressions (linked into the executable, which libtsan
// asks first). gRPC and oneDNN synchronize their own threads in ways TSan
// cannot see (gRPC's completion queues, oneDNN's primitive cache):
// - the calls they make that TSan intercepts (memcpy, free, recvmsg,
//   pthread_rwlock_*) are not reported: from libgrpc and the libraries under
//   it that gRPC's threads hand values between (libgrpc++'s closures freeing
//   what a channel's teardown allocated on another thread, libupb copying a
//   message that libabsl_cord built on another);
// - gRPC's header-only C++ layer reading what a gRPC thread allocated and
//   filled (a call's status and metadata) is not reported;
// - nor what libabsl_status itself copies: gRPC's internal errors are
//   absl::Status values (grpc_error_handle), made on one of its threads and
//   copied on another (grpc_worker_test, grpc_tls_test: a message string
//   allocated and then memcpy'd by libabsl_status, no instrumented frame on
//   either stack). Our code's copies of a Status run its inline (instrumented)
//   members, which are still checked.
// Our code's own accesses to our own data, even when gRPC calls it, still are.
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libgrpc.so\n"
         "called_from_lib:libgrpc++.so\n"
         "called_from_lib:libgpr.so\n"
         "called_from_lib:libupb.so\n"
         "called_from_lib:libabsl_status.so\n"
         "called_from_lib:libdnnl.so\n"
         "race:grpc::internal::CallOp\n";
}
