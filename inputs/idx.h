// IDX files (the MNIST / Fashion-MNIST format, FORMATS.md): a big-endian
// header (two zero bytes, a type code, the number of dimensions, each
// dimension as uint32) followed by the elements, row-major, big-endian. Files
// may be gzip-compressed (detected by their magic bytes) or plain.
// Parsing checks the header before reading the data, and the header against
// the data size: a file that is not IDX, or a header whose dims cannot be
// real (a zero dim beside dims whose product exceeds max_bytes, or items that
// hold no bytes), is InvalidArgument; a header or data cut short, trailing
// bytes, or a broken gzip stream is DataLoss; data beyond max_bytes is
// ResourceExhausted. Every message names the file (and the offending dim).
// Memory: the data's true size, never what a header claims; a plain file's
// size is checked against its header before its data is read.
// Thread safety: pure functions; an IdxFile is a value.
#ifndef SLUICE_INPUTS_IDX_H_
#define SLUICE_INPUTS_IDX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/framework/types.h"
#include "engine/platform/env.h"

namespace sluice {

struct IdxFile {
  DataType dtype = DT_INVALID;  // uint8, int8, int16, int32, float or double
  std::vector<int64_t> dims;    // dims[0] is the number of items
  std::string data;             // the elements in host byte order

  int64_t num_items() const { return dims.empty() ? 0 : dims[0]; }
  // Bytes of one item (the product of dims[1..] times the element size).
  size_t item_bytes() const;
  // REQUIRES: 0 <= i < num_items().
  absl::string_view item(int64_t i) const { return absl::string_view(data).substr(i * item_bytes(), item_bytes()); }
};

struct IdxOptions {
  // Larger (decompressed) files are refused (ResourceExhausted).
  uint64_t max_bytes = 2ull << 30;
};

// Parses file contents (gzip or plain). `name` is used in error messages.
absl::StatusOr<IdxFile> ParseIdx(absl::string_view contents, const std::string& name, const IdxOptions& options = {});
absl::StatusOr<IdxFile> ReadIdxFile(Env* env, const std::string& path, const IdxOptions& options = {});

// Encodes an IdxFile (plain, or gzip when `gzip`).
absl::StatusOr<std::string> EncodeIdx(const IdxFile& file, bool gzip);
absl::Status WriteIdxFile(Env* env, const std::string& path, const IdxFile& file, bool gzip);

// gzip helpers (zlib), also used by readers of compressed text files.
bool LooksGzipped(absl::string_view contents);
// DataLoss for a corrupt or truncated stream; ResourceExhausted beyond max_bytes.
absl::StatusOr<std::string> Gunzip(absl::string_view compressed, const std::string& name, uint64_t max_bytes);
absl::StatusOr<std::string> Gzip(absl::string_view data);

}  // namespace sluice

#endif  // SLUICE_INPUTS_IDX_H_
