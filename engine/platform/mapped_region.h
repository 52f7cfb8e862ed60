// MappedRegion: part of a file mapped read-only into memory, so a reader can
// check and copy records straight from the page cache instead of first having
// the kernel copy them into a buffer (RandomAccessFile::Map, RecordReader).
//
// The danger of a mapping, and the guard against it: touching a page that lies
// past the file's end (someone truncated the file after it was mapped) or that
// the disk cannot deliver raises SIGBUS, which would end the process. Every
// live region is registered with one process-wide SIGBUS handler, installed
// with the first region. A fault inside a registered region has that region's
// pages, from the faulting one to its end, replaced by zero pages, and marks
// the region damaged(); the faulting load then runs again and reads zeros.
// Users of the bytes check damaged() after reading them and report the file as
// changed. A SIGBUS anywhere else goes to the action installed before ours (by
// default the process ends, as it would have without us). If more regions are
// live than the registry holds, Create fails with ResourceExhausted and the
// caller reads instead.
//
// A region asks for huge pages (MADV_HUGEPAGE), so that the parts of the file
// its faults bring into the page cache come in 2 MB folios that it maps as
// huge pages (see mapped_region.cc).
//
// Bytes already read stay as they were read; a view kept across a truncation
// shows zeros from then on, and one kept across a write in place shows the new
// bytes (a mapping shares the page cache).
//
// What the guard cannot cover: a thread that has SIGBUS blocked (the kernel
// then kills the process), a SIGBUS handler installed after ours that does not
// pass signals on, and a process out of mappings (vm.max_map_count) when the
// zero pages are mapped. Nothing in Sluice blocks SIGBUS or installs another
// handler for it.
//
// Ownership: a region owns its mapping and unmaps it when destroyed; it does
// not own the file descriptor. A view (View) owns a share of another region.
// Thread safety: data() may be read from any thread, and damaged() called
// from any, while the region lives.
#ifndef SLUICE_ENGINE_PLATFORM_MAPPED_REGION_H_
#define SLUICE_ENGINE_PLATFORM_MAPPED_REGION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

class MappedRegion {
 public:
  // Maps bytes [offset, offset + n) of the open file `fd`; n == 0 gives an
  // empty region with no mapping. `name` is for error messages. The range
  // should lie within the file (RandomAccessFile::Map cuts it at the size);
  // pages past the end, as after a truncation, read as zeros and mark the
  // region damaged.
  static absl::StatusOr<std::unique_ptr<MappedRegion>> Create(int fd, uint64_t offset, size_t n,
                                                              absl::string_view name);
  // A region that shows bytes [offset, offset + n) of `whole` (cut at its
  // end) and keeps `whole` mapped while it lives; it is damaged() when
  // `whole` is. MappingCache hands these out.
  static std::unique_ptr<MappedRegion> View(std::shared_ptr<const MappedRegion> whole, size_t offset, size_t n);
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  // The byte at `offset`, and how many follow it.
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  // True once a page of the region could not be read (the file shrank, or
  // the disk failed) and was replaced by zeros. A view is damaged when the
  // region it shows part of is, wherever in it the page was.
  bool damaged() const {
    return damaged_flag_ != nullptr && damaged_flag_->load(std::memory_order_acquire);
  }

 private:
  MappedRegion(void* base, size_t mapped_bytes, const char* data, size_t size, int slot)
      : base_(base), mapped_bytes_(mapped_bytes), data_(data), size_(size), slot_(slot) {}

  void* base_;           // the mapping (page-aligned), or nullptr when empty
  size_t mapped_bytes_;  // its length
  const char* data_;
  size_t size_;
  int slot_;  // in the SIGBUS guard's registry; -1 when empty
  const std::atomic<bool>* damaged_flag_ = nullptr;  // that slot's mark (inline: read per record)
  std::shared_ptr<const MappedRegion> whole_;         // for a view: the region it shows part of
};

// How many regions can be live at once (the registry's size).
constexpr int kMaxMappedRegions = 512;

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_MAPPED_REGION_H_
