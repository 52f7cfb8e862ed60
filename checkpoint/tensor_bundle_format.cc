// TensorFlow bundle names and string encoding: see tensor_bundle_format.h.
#include "checkpoint/tensor_bundle_format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/platform/crc32c.h"

namespace sluice {
namespace checkpoint {
namespace {

// CRC32C of one string length as TensorFlow sums it.
uint32_t ExtendLength(uint32_t crc, uint64_t n) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return crc32c::Extend(crc, buf, n <= 0xffffffffu ? 4 : 8);
}

}  // namespace

std::string BundleIndexFilename(absl::string_view prefix) { return absl::StrCat(prefix, ".index"); }

std::string BundleDataFilename(absl::string_view prefix, int shard, int num_shards) {
  return absl::StrFormat("%s.data-%05d-of-%05d", prefix, shard, num_shards);
}

bool IsTensorBundle(Env* env, const std::string& prefix) {
  return !prefix.empty() && env->FileExists(BundleIndexFilename(prefix)).ok() &&
         !env->IsDirectory(BundleIndexFilename(prefix));
}

bool BundleSupportsDtype(DataType dtype) { return DataTypeIsSupported(dtype); }

std::string EncodeBundleStrings(const Tensor& tensor, uint32_t* crc) {
  std::string out;
  const tstring* s = tensor.NumElements() > 0 ? tensor.data<tstring>() : nullptr;
  uint32_t c = 0;
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    uint64_t n = s[i].size();
    c = ExtendLength(c, n);
    while (n >= 0x80) {
      out.push_back(static_cast<char>((n & 0x7f) | 0x80));
      n >>= 7;
    }
    out.push_back(static_cast<char>(n));
  }
  const uint32_t masked = crc32c::Mask(c);
  char buf[4];
  for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>((masked >> (8 * i)) & 0xff);
  out.append(buf, 4);
  c = crc32c::Extend(c, buf, 4);
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    out.append(s[i]);
    c = crc32c::Extend(c, s[i].data(), s[i].size());
  }
  *crc = c;
  return out;
}

absl::Status DecodeBundleStrings(absl::string_view bytes, uint32_t expected_crc, const std::string& what,
                                 Tensor* out) {
  const int64_t n = out->NumElements();
  std::vector<uint64_t> lengths(static_cast<size_t>(n));
  size_t pos = 0;
  uint32_t c = 0;
  uint64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t v = 0;
    int shift = 0;
    while (true) {
      if (pos >= bytes.size() || shift > 63) {
        return absl::DataLossError(absl::StrCat(what, ": string element ", i, " has a truncated length"));
      }
      const uint8_t b = static_cast<uint8_t>(bytes[pos++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if ((b & 0x80) == 0) break;
    }
    if (v > bytes.size()) {
      return absl::DataLossError(absl::StrCat(what, ": string element ", i, " claims ", v, " bytes, more than the tensor's ",
                                              bytes.size()));
    }
    lengths[i] = v;
    total += v;
    c = ExtendLength(c, v);
  }
  if (bytes.size() - pos < 4) {
    return absl::DataLossError(absl::StrCat(what, ": truncated before the CRC of the string lengths"));
  }
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[pos + i])) << (8 * i);
  if (crc32c::Unmask(stored) != c) {
    return absl::DataLossError(absl::StrCat(what, ": CRC32C mismatch in the string lengths (corrupt data)"));
  }
  c = crc32c::Extend(c, bytes.data() + pos, 4);
  pos += 4;
  if (total != bytes.size() - pos) {
    return absl::DataLossError(absl::StrCat(what, ": the string lengths sum to ", total, " bytes, the entry holds ",
                                            bytes.size() - pos));
  }
  tstring* s = n > 0 ? out->data<tstring>() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    s[i].assign(bytes.data() + pos, lengths[i]);
    pos += lengths[i];
  }
  c = crc32c::Extend(c, bytes.data() + pos - total, total);
  if (c != expected_crc) {
    return absl::DataLossError(absl::StrCat(what, ": CRC32C mismatch (corrupt data)"));
  }
  return absl::OkStatus();
}

}  // namespace checkpoint
}  // namespace sluice
