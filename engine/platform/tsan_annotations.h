// Orderings that ThreadSanitizer cannot see, stated where our code hands work
// to an uninstrumented library (Debian's gRPC): --config=tsan builds only
// (SLUICE_TSAN); everywhere else these are empty inline functions.
//
//   TsanRelease(key) ... TsanAcquire(key): what one thread did before the
//     release happens before what another does after the acquire on the same
//     key (a gRPC call started here, its completion run on gRPC's thread).
//   TsanIgnoreWritesInScope: this thread's writes in the scope are not
//     recorded (what gRPC's header-only layer builds inside a call's start
//     and its own thread reads later). It hides races in those writes too;
//     keep such scopes to single calls into the library.
//
// Thread safety: each call concerns the calling thread only.
#ifndef SLUICE_ENGINE_PLATFORM_TSAN_ANNOTATIONS_H_
#define SLUICE_ENGINE_PLATFORM_TSAN_ANNOTATIONS_H_

#if defined(SLUICE_TSAN)
#include <sanitizer/tsan_interface.h>
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif

namespace sluice {

#if defined(SLUICE_TSAN)
inline void TsanRelease(const void* key) { __tsan_release(const_cast<void*>(key)); }
inline void TsanAcquire(const void* key) { __tsan_acquire(const_cast<void*>(key)); }
class TsanIgnoreWritesInScope {
 public:
  TsanIgnoreWritesInScope() { AnnotateIgnoreWritesBegin(__FILE__, __LINE__); }
  ~TsanIgnoreWritesInScope() { AnnotateIgnoreWritesEnd(__FILE__, __LINE__); }
  TsanIgnoreWritesInScope(const TsanIgnoreWritesInScope&) = delete;
  TsanIgnoreWritesInScope& operator=(const TsanIgnoreWritesInScope&) = delete;
};
#else
inline void TsanRelease(const void*) {}
inline void TsanAcquire(const void*) {}
class TsanIgnoreWritesInScope {
 public:
  // User-provided, as the tsan build's are, so that a scope object is not an
  // "unused variable" to the compiler.
  TsanIgnoreWritesInScope() {}
  ~TsanIgnoreWritesInScope() {}
  TsanIgnoreWritesInScope(const TsanIgnoreWritesInScope&) = delete;
  TsanIgnoreWritesInScope& operator=(const TsanIgnoreWritesInScope&) = delete;
};
#endif

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_TSAN_ANNOTATIONS_H_
