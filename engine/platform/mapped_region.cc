// MappedRegion and its SIGBUS guard (see mapped_region.h).
//
// The registry is a fixed array of slots, one per live region, read by the
// signal handler without locks. A slot's owner writes its range under a
// sequence count (odd while it changes); the handler skips a slot whose count
// is odd or moves while it reads, which is safe: a region being set up or torn
// down is not being read, so the fault cannot be in it. Everything the handler
// does is async-signal-safe: atomic loads and stores, and raw system calls.
#include "engine/platform/mapped_region.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "engine/platform/env.h"

namespace sluice {
namespace {

struct Slot {
  std::atomic<bool> taken{false};
  std::atomic<uint32_t> sequence{0};
  std::atomic<uintptr_t> begin{0};  // [begin, end) of the mapping; 0 when free
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> damaged{false};
};

// The handler reads these without locks; the raw mmap call below takes a
// 64-bit offset argument (x86-64, AArch64), unlike 32-bit targets' mmap2.
static_assert(std::atomic<uintptr_t>::is_always_lock_free, "lock-free atomics for the signal handler");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "lock-free atomics for the signal handler");
static_assert(std::atomic<bool>::is_always_lock_free, "lock-free atomics for the signal handler");
static_assert(sizeof(void*) == 8, "the SIGBUS guard's raw mmap call assumes a 64-bit target");

Slot g_slots[kMaxMappedRegions];
uintptr_t g_page_size = 0;
struct sigaction g_previous_action;

// Sets a slot's range (both 0 to clear it) under its sequence count.
void PublishRange(Slot& slot, uintptr_t begin, uintptr_t end) {
  const uint32_t s = slot.sequence.load(std::memory_order_relaxed);
  slot.sequence.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.begin.store(begin, std::memory_order_relaxed);
  slot.end.store(end, std::memory_order_relaxed);
  slot.sequence.store(s + 2, std::memory_order_release);
}

// The slot whose region holds `addr`, or nullptr; *end is the region's end.
Slot* FindRegion(uintptr_t addr, uintptr_t* end) {
  for (Slot& slot : g_slots) {
    const uint32_t s = slot.sequence.load(std::memory_order_acquire);
    if ((s & 1) != 0) continue;
    const uintptr_t b = slot.begin.load(std::memory_order_relaxed);
    const uintptr_t e = slot.end.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.sequence.load(std::memory_order_relaxed) != s) continue;
    if (b != 0 && addr >= b && addr < e) {
      *end = e;
      return &slot;
    }
  }
  return nullptr;
}

// A SIGBUS that is not ours: what would have happened without the guard.
void PassOn(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous_action;
  // sa_handler and sa_sigaction share storage: SIG_DFL and SIG_IGN are
  // checked first, whatever the flags say (SA_RESETHAND keeps SA_SIGINFO).
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    if ((previous.sa_flags & SA_SIGINFO) != 0) {
      previous.sa_sigaction(sig, info, context);
    } else {
      previous.sa_handler(sig);
    }
    return;
  }
  const bool sent = info->si_code <= 0;  // by kill(), sigqueue() or tgkill(), not a fault
  if (previous.sa_handler == SIG_IGN && sent) return;
  // The default action. For a fault, returning runs the faulting access
  // again, which now ends the process; a sent signal is raised again, and
  // arrives when this handler returns (SIGBUS is blocked while it runs).
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(SIGBUS, &default_action, nullptr);
  if (sent) raise(sig);
}

void OnSigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  uintptr_t end = 0;
  Slot* slot = info->si_code > 0 ? FindRegion(addr, &end) : nullptr;
  if (slot != nullptr) {
    // Zero pages over the rest of the region; the load then reads zeros.
    // Marked first, so no reader of the region sees zeros before the mark.
    slot->damaged.store(true, std::memory_order_release);
    const uintptr_t page = addr & ~(g_page_size - 1);
    const long got = syscall(SYS_mmap, page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (static_cast<uintptr_t>(got) == page) {
      errno = saved_errno;
      return;
    }
    // Out of mappings (vm.max_map_count): the process ends as it would have.
  }
  errno = saved_errno;
  PassOn(sig, info, context);
}

void InstallGuard() {
  g_page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_sigaction = OnSigbus;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&action.sa_mask);
  // The previous action is saved before ours is installed, so a SIGBUS that
  // arrives in between never finds it unset.
  sigaction(SIGBUS, nullptr, &g_previous_action);
  sigaction(SIGBUS, &action, nullptr);
}

int TakeSlot() {
  for (int i = 0; i < kMaxMappedRegions; ++i) {
    bool expected = false;
    if (g_slots[i].taken.compare_exchange_strong(expected, true, std::memory_order_acquire)) return i;
  }
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MappedRegion>> MappedRegion::Create(int fd, uint64_t offset, size_t n,
                                                                   absl::string_view name) {
  if (n == 0) return std::unique_ptr<MappedRegion>(new MappedRegion(nullptr, 0, nullptr, 0, -1));
  static std::once_flag installed;
  std::call_once(installed, InstallGuard);
  // Allocated first, so nothing can fail between the mmap and its owner.
  std::unique_ptr<MappedRegion> region(new MappedRegion(nullptr, 0, nullptr, 0, -1));
  const int slot = TakeSlot();
  if (slot < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("map ", name, ": ", kMaxMappedRegions, " mapped regions are live already"));
  }
  const uint64_t start = offset & ~static_cast<uint64_t>(g_page_size - 1);
  const size_t mapped_bytes = static_cast<size_t>(offset - start) + n;
  void* base = ::mmap(nullptr, mapped_bytes, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  if (base == MAP_FAILED) {
    const int err = errno;
    g_slots[slot].taken.store(false, std::memory_order_release);
    return ErrnoToStatus(err, "map", absl::StrCat(name, " at offset ", offset));
  }
  // Huge pages, where the kernel has them (transparent huge pages not
  // "never"): a fault on a part of the file that is not in the page cache
  // then reads it in 2 MB folios, aligned in the file, which the mapping takes
  // as huge pages and which later mappings and reads of the file find there.
  // Without it the kernel caches a file read this way in small folios, and
  // every later pass maps it page by page: with 1 KB TFRecords read from
  // disk, later epochs ran at 9.5-14M records/s instead of 25-27M, and the
  // first at 2.1-2.5 GB/s instead of 3.1-3.3 (docs/PERFORMANCE.md, "Session
  // 31"). Parts already cached keep their folios. Where it is refused (no
  // THP in the kernel), nothing changes.
  (void)::madvise(base, mapped_bytes, MADV_HUGEPAGE);
  Slot& s = g_slots[slot];
  s.damaged.store(false, std::memory_order_relaxed);
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  // The registered range covers whole pages: the kernel maps them whole.
  PublishRange(s, b, (b + mapped_bytes + g_page_size - 1) & ~(g_page_size - 1));
  region->base_ = base;
  region->mapped_bytes_ = mapped_bytes;
  region->data_ = static_cast<const char*>(base) + (offset - start);
  region->size_ = n;
  region->slot_ = slot;
  region->damaged_flag_ = &s.damaged;
  return region;
}

std::unique_ptr<MappedRegion> MappedRegion::View(std::shared_ptr<const MappedRegion> whole, size_t offset,
                                                 size_t n) {
  const size_t at = offset < whole->size() ? offset : whole->size();
  const size_t left = whole->size() - at;
  std::unique_ptr<MappedRegion> view(new MappedRegion(nullptr, 0, whole->data() + at, n < left ? n : left, -1));
  view->damaged_flag_ = whole->damaged_flag_;
  view->whole_ = std::move(whole);
  return view;
}

MappedRegion::~MappedRegion() {
  if (base_ == nullptr) return;
  Slot& s = g_slots[slot_];
  PublishRange(s, 0, 0);
  ::munmap(base_, mapped_bytes_);
  s.taken.store(false, std::memory_order_release);
}


}  // namespace sluice
