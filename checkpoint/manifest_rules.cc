// Manifest consistency rules: see manifest_rules.h and FORMAT.md.
#include "checkpoint/manifest_rules.h"

#include <algorithm>
#include <string>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint/store_format.h"
#include "checkpoint/tensor_slice.h"
#include "engine/framework/tensor.h"

namespace sluice {
namespace checkpoint {
namespace {

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(what); }

// One stored slice with every "-" resolved: [start, start + length) per dim.
struct Box {
  const TensorEntry* entry;
  std::vector<int64_t> lo, hi;
};

bool Overlap(const Box& a, const Box& b) {
  for (size_t d = 0; d < a.lo.size(); ++d) {
    if (std::max(a.lo[d], b.lo[d]) >= std::min(a.hi[d], b.hi[d])) return false;
  }
  return true;
}

// The slices of one variable (all of rank `dims`) must be pairwise disjoint.
// Sweep along the dimension with the most distinct starts: only slices whose
// ranges overlap in that dimension are compared (none, for the usual
// partitioning along one axis).
absl::Status CheckDisjoint(std::vector<Box> boxes, int dims) {
  if (boxes.size() < 2 || dims == 0) return absl::OkStatus();  // a scalar has no slice specs
  int sweep = 0;
  size_t most = 0;
  for (int d = 0; d < dims; ++d) {
    std::vector<int64_t> starts;
    for (const Box& b : boxes) starts.push_back(b.lo[d]);
    std::sort(starts.begin(), starts.end());
    const size_t distinct = std::unique(starts.begin(), starts.end()) - starts.begin();
    if (distinct > most) {
      most = distinct;
      sweep = d;
    }
  }
  std::stable_sort(boxes.begin(), boxes.end(), [sweep](const Box& a, const Box& b) { return a.lo[sweep] < b.lo[sweep]; });
  std::vector<const Box*> active;  // boxes whose range in `sweep` reaches the current start
  for (const Box& b : boxes) {
    active.erase(std::remove_if(active.begin(), active.end(), [&](const Box* a) { return a->hi[sweep] <= b.lo[sweep]; }),
                 active.end());
    for (const Box* a : active) {
      if (Overlap(*a, b)) {
        return Bad(absl::StrCat("slices '", a->entry->slice_spec(), "' and '", b.entry->slice_spec(), "' of '",
                                b.entry->full_name(), "' overlap"));
      }
    }
    active.push_back(&b);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckEntry(const TensorEntry& e, uint64_t chunk_bytes) {
  if (e.key().empty()) return Bad("empty key");
  if (e.full_name().empty() || e.full_name().find('@') != std::string::npos ||
      e.full_name().find('\0') != std::string::npos) {
    return Bad(absl::StrCat("bad variable name '", e.full_name(), "'"));
  }
  if (!DataTypeIsSupported(e.dtype())) return Bad(absl::StrCat("unsupported dtype ", e.dtype()));
  auto shape = TensorShape::FromProto(e.shape());
  if (!shape.ok()) return Bad(absl::StrCat("bad shape: ", shape.status().message()));
  auto full = TensorShape::FromProto(e.full_shape());
  if (!full.ok()) return Bad(absl::StrCat("bad full shape: ", full.status().message()));
  const uint64_t elements = static_cast<uint64_t>(shape->num_elements());
  if (e.dtype() == DT_STRING) {
    // Every string takes at least its one-byte length: more elements than
    // bytes would be an allocation the stored bytes cannot fill.
    if (elements > e.num_bytes()) {
      return Bad(absl::StrCat("string tensor of shape ", shape->DebugString(), " (", elements,
                              " elements) in only ", e.num_bytes(), " bytes"));
    }
  } else {
    const uint64_t size = DataTypeSize(e.dtype());
    if (e.num_bytes() % size != 0 || e.num_bytes() / size != elements) {
      return Bad(absl::StrCat("num_bytes ", e.num_bytes(), " does not match shape ", shape->DebugString(), " of ",
                              DataTypeString(e.dtype())));
    }
  }
  if (chunk_bytes == 0) return Bad("chunk_bytes is 0");
  const uint64_t chunks = e.num_bytes() == 0 ? 0 : (e.num_bytes() - 1) / chunk_bytes + 1;
  if (e.num_chunks() != chunks) {
    return Bad(absl::StrCat("num_chunks ", e.num_chunks(), " for ", e.num_bytes(), " bytes"));
  }
  if (e.slice_spec().empty()) {
    if (e.key() != e.full_name()) return Bad(absl::StrCat("whole tensor of '", e.full_name(), "' under another key"));
    if (*shape != *full) {
      return Bad(absl::StrCat("shape ", shape->DebugString(), " differs from the full shape ", full->DebugString()));
    }
    return absl::OkStatus();
  }
  if (e.dtype() == DT_STRING) return Bad("a string tensor stored as a slice");
  auto slice = ParseSliceSpec(e.slice_spec(), *full);
  if (!slice.ok()) return Bad(std::string(slice.status().message()));
  if (slice->ToString() != e.slice_spec() || e.key() != EntryKey(e.full_name(), e.slice_spec())) {
    return Bad(absl::StrCat("key and slice '", e.slice_spec(), "' of '", e.full_name(), "' are not in canonical form"));
  }
  const TensorShape want = slice->SliceShape(*full);
  if (*shape != want) {
    return Bad(absl::StrCat("shape ", shape->DebugString(), " does not match its slice '", e.slice_spec(), "' of ",
                            full->DebugString(), " (", want.DebugString(), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckManifestEntries(const CheckpointManifest& m) {
  const auto& tensors = m.tensors();
  for (int i = 0; i < tensors.size(); ++i) {
    const TensorEntry& e = tensors[i];
    auto named = [&](const std::string& what) { return Bad(absl::StrCat("tensor '", e.key(), "': ", what)); };
    if (e.shard() < 0 || e.shard() >= m.num_shards()) return named(absl::StrCat("in bad shard ", e.shard()));
    absl::Status s = CheckEntry(e, m.chunk_bytes());
    if (!s.ok()) return named(std::string(s.message()));
    if (i > 0 && tensors[i - 1].key() >= e.key()) {
      return named(tensors[i - 1].key() == e.key() ? "listed twice" : "out of order (entries are sorted by key)");
    }
  }
  // Group the entries by variable.
  std::map<std::string, std::vector<const TensorEntry*>> by_name;
  for (const TensorEntry& e : tensors) by_name[e.full_name()].push_back(&e);
  for (const auto& [name, entries] : by_name) {
    if (entries.size() == 1) continue;
    const TensorEntry& first = *entries[0];
    const TensorShape full = *TensorShape::FromProto(first.full_shape());  // CheckEntry parsed it
    if (static_cast<int>(entries.size()) > kMaxSlicesPerVariable) {
      return Bad(absl::StrCat("variable '", name, "' is stored in ", entries.size(), " slices, more than ",
                              kMaxSlicesPerVariable));
    }
    std::vector<Box> boxes;
    for (const TensorEntry* e : entries) {
      if (e->slice_spec().empty()) {
        return Bad(absl::StrCat("variable '", name, "' is stored both whole and in slices"));
      }
      if (e->dtype() != first.dtype() || *TensorShape::FromProto(e->full_shape()) != full) {
        return Bad(absl::StrCat("slices '", first.slice_spec(), "' and '", e->slice_spec(), "' of '", name,
                                "' disagree on the dtype or full shape"));
      }
      const TensorSlice slice = *ParseSliceSpec(e->slice_spec(), full);  // CheckEntry parsed it
      Box b{e, {}, {}};
      bool empty = false;
      for (int d = 0; d < full.dims(); ++d) {
        b.lo.push_back(slice.Start(d));
        b.hi.push_back(slice.Start(d) + slice.Length(d, full));
        empty = empty || b.hi.back() == b.lo.back();
      }
      if (!empty) boxes.push_back(std::move(b));
    }
    absl::Status s = CheckDisjoint(std::move(boxes), full.dims());
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace checkpoint
}  // namespace sluice
