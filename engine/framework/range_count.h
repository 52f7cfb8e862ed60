// The number of elements of Range(start, limit, delta) over integers, exact
// over all of int64 (a count computed in double is off by up to 2^10 near
// 2^63, and the elements past `limit` overflow), and the i-th element
// without intermediate overflow. Shared by the Range kernel, its shape
// function and static shape values, so all three agree.
// Pure functions; safe from any thread.
#ifndef SLUICE_ENGINE_FRAMEWORK_RANGE_COUNT_H_
#define SLUICE_ENGINE_FRAMEWORK_RANGE_COUNT_H_

#include <cstdint>
#include <optional>

namespace sluice {

// ceil(|limit - start| / |delta|); nullopt when delta is 0 or the range runs
// the wrong way (delta > 0 with start > limit, or delta < 0 with start < limit).
inline std::optional<uint64_t> IntegerRangeCount(int64_t start, int64_t limit, int64_t delta) {
  if (delta == 0 || (delta > 0 ? start > limit : start < limit)) return std::nullopt;
  // Differences of int64 values as uint64 are exact (mod 2^64, and they fit).
  const uint64_t span = delta > 0 ? static_cast<uint64_t>(limit) - static_cast<uint64_t>(start)
                                  : static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
  const uint64_t step = delta > 0 ? static_cast<uint64_t>(delta) : 0 - static_cast<uint64_t>(delta);
  return span / step + (span % step != 0 ? 1 : 0);
}

// start + i * delta, for i below IntegerRangeCount: the true value lies
// between start and limit, so the wrapping uint64 arithmetic lands on it.
inline int64_t IntegerRangeElement(int64_t start, int64_t delta, uint64_t i) {
  return static_cast<int64_t>(static_cast<uint64_t>(start) + i * static_cast<uint64_t>(delta));
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_RANGE_COUNT_H_
