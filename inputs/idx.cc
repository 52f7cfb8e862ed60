// IDX parsing and encoding, and gzip via zlib.
#include "inputs/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "absl/base/internal/endian.h"
#include "absl/strings/str_cat.h"
#include "engine/platform/string_file.h"

namespace sluice {
namespace {

struct TypeCode {
  uint8_t code;
  DataType dtype;
  int size;
};
constexpr TypeCode kTypes[] = {{0x08, DT_UINT8, 1}, {0x09, DT_INT8, 1},  {0x0B, DT_INT16, 2},
                               {0x0C, DT_INT32, 4}, {0x0D, DT_FLOAT, 4}, {0x0E, DT_DOUBLE, 8}};

const TypeCode* FindCode(uint8_t code) {
  for (const TypeCode& t : kTypes) {
    if (t.code == code) return &t;
  }
  return nullptr;
}
const TypeCode* FindType(DataType dtype) {
  for (const TypeCode& t : kTypes) {
    if (t.dtype == dtype) return &t;
  }
  return nullptr;
}

// Reverses the bytes of each `size`-byte element (big-endian <-> host).
void SwapElements(char* data, size_t bytes, int size) {
  if (size == 1) return;
  for (size_t i = 0; i + size <= bytes; i += size) std::reverse(data + i, data + i + size);
}

}  // namespace

size_t IdxFile::item_bytes() const {
  size_t n = static_cast<size_t>(DataTypeSize(dtype));
  for (size_t i = 1; i < dims.size(); ++i) n *= static_cast<size_t>(dims[i]);
  return n;
}

bool LooksGzipped(absl::string_view contents) {
  return contents.size() >= 2 && static_cast<uint8_t>(contents[0]) == 0x1f && static_cast<uint8_t>(contents[1]) == 0x8b;
}

absl::StatusOr<std::string> Gunzip(absl::string_view compressed, const std::string& name, uint64_t max_bytes) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("zlib inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (out.size() >= max_bytes) {
      inflateEnd(&zs);
      return absl::ResourceExhaustedError(
          absl::StrCat(name, ": decompresses to more than the limit of ", max_bytes, " bytes"));
    }
    size_t old = out.size();
    size_t grow = std::max<size_t>(1 << 16, std::min<uint64_t>(old, max_bytes - old));
    out.resize(old + grow);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    zs.avail_out = static_cast<uInt>(grow);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(old + grow - zs.avail_out);
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      return absl::DataLossError(absl::StrCat(name, ": truncated gzip stream after ", zs.total_in, " bytes"));
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      std::string msg = zs.msg != nullptr ? zs.msg : "error";
      inflateEnd(&zs);
      return absl::DataLossError(absl::StrCat(name, ": corrupt gzip stream at compressed byte ", zs.total_in, ": ", msg));
    }
  }
  inflateEnd(&zs);
  return out;
}

absl::StatusOr<std::string> Gzip(absl::string_view data) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("zlib deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return absl::InternalError("zlib deflate did not finish");
  return out;
}

namespace {

// The bytes of an IDX file, plain or gunzipped, read front to back on demand:
// nothing is buffered beyond one 64 KiB chunk of compressed input, so a
// header can be checked before any of the data is read. Decompressing past
// `max_bytes` is ResourceExhausted (a gzip bomb); a corrupt or truncated
// stream is DataLoss. Not thread-safe.
class IdxStream {
 public:
  IdxStream(const RandomAccessFile* file, uint64_t size, const std::string& name, uint64_t max_bytes)
      : file_(file), size_(size), name_(name), max_bytes_(max_bytes) {
    std::memset(&zs_, 0, sizeof(zs_));
  }
  ~IdxStream() {
    if (inflating_) inflateEnd(&zs_);
  }
  IdxStream(const IdxStream&) = delete;
  IdxStream& operator=(const IdxStream&) = delete;

  // Looks at the first bytes: gzip or plain.
  absl::Status Open() {
    char magic[2];
    absl::string_view head;
    absl::Status s = file_->Read(0, 2, &head, magic);
    if (!s.ok()) return s;
    if (!LooksGzipped(head)) return absl::OkStatus();
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("zlib inflateInit2 failed");
    inflating_ = true;
    return absl::OkStatus();
  }
  bool gzipped() const { return inflating_; }
  // The size of the file as stored (compressed, for gzip).
  uint64_t stored_size() const { return size_; }

  // Reads up to n bytes into dst; *got < n only at the end of the data.
  absl::Status Read(char* dst, size_t n, size_t* got) {
    *got = 0;
    return inflating_ ? Inflate(dst, n, got) : ReadStored(dst, n, got);
  }

 private:
  absl::Status ReadStored(char* dst, size_t n, size_t* got) {
    while (*got < n) {
      absl::string_view r;
      absl::Status s = file_->Read(offset_, n - *got, &r, dst + *got);
      if (!s.ok()) return s;
      if (r.empty()) break;
      if (r.data() != dst + *got) std::memmove(dst + *got, r.data(), r.size());
      *got += r.size();
      offset_ += r.size();
    }
    return absl::OkStatus();
  }

  absl::Status Inflate(char* dst, size_t n, size_t* got) {
    while (*got < n && !stream_end_) {
      if (zs_.total_out > max_bytes_) {
        return absl::ResourceExhaustedError(
            absl::StrCat(name_, ": decompresses to more than the limit of ", max_bytes_, " bytes"));
      }
      if (zs_.avail_in == 0 && !stored_end_) {
        in_.resize(1 << 16);
        size_t read = 0;
        absl::Status s = ReadStored(in_.data(), in_.size(), &read);
        if (!s.ok()) return s;
        stored_end_ = read == 0;
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(read);
      }
      // At most one byte past the limit per call, so the check above fires.
      const uint64_t room = max_bytes_ + 1 - std::min<uint64_t>(zs_.total_out, max_bytes_);
      const size_t want = static_cast<size_t>(std::min<uint64_t>({n - *got, room, uint64_t{1} << 30}));
      zs_.next_out = reinterpret_cast<Bytef*>(dst + *got);
      zs_.avail_out = static_cast<uInt>(want);
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      *got += want - zs_.avail_out;
      if (rc == Z_STREAM_END) {
        stream_end_ = true;  // bytes after the gzip member are ignored
      } else if (rc == Z_BUF_ERROR && zs_.avail_in == 0 && stored_end_) {
        return absl::DataLossError(absl::StrCat(name_, ": truncated gzip stream after ", zs_.total_in, " bytes"));
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return absl::DataLossError(absl::StrCat(name_, ": corrupt gzip stream at compressed byte ", zs_.total_in, ": ",
                                                zs_.msg != nullptr ? zs_.msg : "error"));
      }
    }
    if (zs_.total_out > max_bytes_) {
      return absl::ResourceExhaustedError(
          absl::StrCat(name_, ": decompresses to more than the limit of ", max_bytes_, " bytes"));
    }
    return absl::OkStatus();
  }

  const RandomAccessFile* file_;
  const uint64_t size_;
  const std::string& name_;
  const uint64_t max_bytes_;
  uint64_t offset_ = 0;  // of the next stored byte to read
  z_stream zs_;
  bool inflating_ = false;
  bool stored_end_ = false;  // every stored byte has been read
  bool stream_end_ = false;  // the gzip stream ended (its CRC and length checked)
  std::string in_;           // compressed input
};

// Checks the dimensions of an IDX header and returns the number of data
// bytes they describe. The rules keep every shape built from the header
// sound: the product of the non-zero dims fits max_bytes (a zero dim cannot
// hide absurd ones, whose product would overflow an element count), and a
// file with items holds data for them (no 2^32 empty items to index).
absl::StatusOr<uint64_t> CheckIdxDims(const std::vector<int64_t>& dims, int element_size, const std::string& name,
                                      uint64_t max_bytes) {
  int zero_at = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && zero_at < 0) zero_at = static_cast<int>(i);
  }
  uint64_t nonzero = static_cast<uint64_t>(element_size);  // bytes, over the non-zero dims
  for (size_t i = 0; i < dims.size(); ++i) {
    const uint64_t d = static_cast<uint64_t>(dims[i]);
    if (d == 0) continue;
    if (nonzero > max_bytes / d) {
      if (zero_at >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": IDX header dimension ", i, " is ", d, ": with dimension ", zero_at,
            " being 0 the file holds no data, but its other dimensions describe more than the limit of ", max_bytes,
            " bytes (a corrupt header?)"));
      }
      return absl::ResourceExhaustedError(absl::StrCat(name, ": IDX header dimension ", i, " is ", d,
                                                       ": the data it describes exceeds the limit of ", max_bytes,
                                                       " bytes"));
    }
    nonzero *= d;
  }
  if (zero_at > 0 && dims[0] > 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": IDX header dimension ", zero_at,
                                                   " is 0, so none of its ", dims[0], " items holds any data"));
  }
  return zero_at >= 0 ? 0 : nonzero;
}

// A header that fails its checks in a gzip stream may be corrupt bytes
// rather than a bad file: the rest of the stream (discarded, up to the
// decompression limit) decides, so that corruption reads as DataLoss.
absl::Status HeaderError(IdxStream* in, absl::Status header_error) {
  if (!in->gzipped()) return header_error;
  std::string scratch(1 << 16, '\0');
  size_t got = 0;
  do {
    absl::Status s = in->Read(scratch.data(), scratch.size(), &got);
    if (absl::IsDataLoss(s)) return s;
    if (!s.ok()) break;
  } while (got == scratch.size());
  return header_error;
}

absl::StatusOr<IdxFile> ParseIdxStream(IdxStream* in, const std::string& name, const IdxOptions& options) {
  absl::Status s = in->Open();
  if (!s.ok()) return s;
  if (!in->gzipped() && in->stored_size() > options.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(name, ": larger than the limit of ", options.max_bytes, " bytes"));
  }
  char h[4];
  size_t got = 0;
  s = in->Read(h, 4, &got);
  if (!s.ok()) return s;
  if (got < 4) return absl::DataLossError(absl::StrCat(name, ": ", got, " bytes is too short for an IDX header"));
  if (h[0] != 0 || h[1] != 0) {
    return HeaderError(in, absl::InvalidArgumentError(absl::StrCat(
                               name, ": not an IDX file (the magic number must start with two zero bytes)")));
  }
  const TypeCode* type = FindCode(static_cast<uint8_t>(h[2]));
  if (type == nullptr) {
    return HeaderError(in, absl::InvalidArgumentError(absl::StrCat(
                               name, ": not an IDX file (unknown type code 0x",
                               absl::Hex(static_cast<uint8_t>(h[2]), absl::kZeroPad2), ")")));
  }
  const int ndims = static_cast<uint8_t>(h[3]);
  if (ndims == 0) {
    return HeaderError(in, absl::InvalidArgumentError(absl::StrCat(name, ": IDX header has zero dimensions")));
  }
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  char dims[4 * 255];
  s = in->Read(dims, header - 4, &got);
  if (!s.ok()) return s;
  if (got < header - 4) {
    return absl::DataLossError(absl::StrCat(name, ": truncated IDX header (", ndims, " dimensions need ", header,
                                            " bytes, the file has ", 4 + got, ")"));
  }
  IdxFile out;
  out.dtype = type->dtype;
  for (int i = 0; i < ndims; ++i) out.dims.push_back(absl::big_endian::Load32(dims + 4 * i));
  auto checked = CheckIdxDims(out.dims, type->size, name, options.max_bytes);
  if (!checked.ok()) return HeaderError(in, checked.status());
  const uint64_t expected = *checked;
  if (!in->gzipped()) {
    // The stored size settles the data's size before any of it is read.
    const uint64_t actual = in->stored_size() - std::min<uint64_t>(in->stored_size(), header);
    if (actual < expected) {
      return absl::DataLossError(absl::StrCat(name, ": truncated IDX data: the header describes ", expected,
                                              " bytes, the file has ", actual));
    }
    if (actual > expected) {
      return absl::DataLossError(absl::StrCat(name, ": the IDX header describes ", expected, " bytes of data but ",
                                              actual - expected, " more bytes follow"));
    }
    out.data.resize(expected);
    s = in->Read(out.data.data(), expected, &got);
    if (!s.ok()) return s;
    if (got < expected) {
      return absl::DataLossError(absl::StrCat(name, ": truncated IDX data: the header describes ", expected,
                                              " bytes, the file has ", got, " (it shrank while read)"));
    }
  } else {
    // A compressed size says little about the data's: grow with what
    // arrives, so a lying header costs no more memory than the true data.
    uint64_t have = 0;
    while (have < expected) {
      const uint64_t chunk = std::min<uint64_t>(expected - have, std::max<uint64_t>(have, 1 << 16));
      out.data.resize(have + chunk);
      s = in->Read(out.data.data() + have, chunk, &got);
      if (!s.ok()) return s;
      have += got;
      if (got < chunk) {
        return absl::DataLossError(absl::StrCat(name, ": truncated IDX data: the header describes ", expected,
                                                " bytes, the file has ", have));
      }
    }
    // The stream must end here (which also checks gzip's CRC and length).
    uint64_t trailing = 0;
    std::string scratch(1 << 16, '\0');
    do {
      s = in->Read(scratch.data(), scratch.size(), &got);
      if (!s.ok()) return s;
      trailing += got;
    } while (got == scratch.size());
    if (trailing > 0) {
      return absl::DataLossError(absl::StrCat(name, ": the IDX header describes ", expected, " bytes of data but ",
                                              trailing, " more bytes follow"));
    }
  }
  SwapElements(out.data.data(), out.data.size(), type->size);
  return out;
}

}  // namespace

absl::StatusOr<IdxFile> ParseIdx(absl::string_view contents, const std::string& name, const IdxOptions& options) {
  StringFile file(contents, name);
  IdxStream in(&file, contents.size(), name, options.max_bytes);
  return ParseIdxStream(&in, name, options);
}

absl::StatusOr<IdxFile> ReadIdxFile(Env* env, const std::string& path, const IdxOptions& options) {
  auto file = env->NewRandomAccessFile(path);
  if (!file.ok()) return file.status();
  auto size = env->GetFileSize(path);
  if (!size.ok()) return size.status();
  IdxStream in(file->get(), *size, path, options.max_bytes);
  return ParseIdxStream(&in, path, options);
}

absl::StatusOr<std::string> EncodeIdx(const IdxFile& file, bool gzip) {
  const TypeCode* type = FindType(file.dtype);
  if (type == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("IDX cannot hold ", DataTypeString(file.dtype)));
  }
  if (file.dims.empty() || file.dims.size() > 255) {
    return absl::InvalidArgumentError(absl::StrCat("IDX needs 1 to 255 dimensions, got ", file.dims.size()));
  }
  uint64_t expected = static_cast<uint64_t>(type->size);
  std::string out(4 + 4 * file.dims.size(), '\0');
  out[2] = static_cast<char>(type->code);
  out[3] = static_cast<char>(file.dims.size());
  for (size_t i = 0; i < file.dims.size(); ++i) {
    if (file.dims[i] < 0 || file.dims[i] > 0xffffffffll) {
      return absl::InvalidArgumentError(absl::StrCat("IDX dimension ", i, " out of range: ", file.dims[i]));
    }
    absl::big_endian::Store32(out.data() + 4 + 4 * i, static_cast<uint32_t>(file.dims[i]));
    expected *= static_cast<uint64_t>(file.dims[i]);
  }
  if (expected != file.data.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IDX dims describe ", expected, " bytes but the data has ", file.data.size()));
  }
  size_t start = out.size();
  out.append(file.data);
  SwapElements(out.data() + start, file.data.size(), type->size);
  if (!gzip) return out;
  return Gzip(out);
}

absl::Status WriteIdxFile(Env* env, const std::string& path, const IdxFile& file, bool gzip) {
  auto bytes = EncodeIdx(file, gzip);
  if (!bytes.ok()) return bytes.status();
  return WriteStringToFile(env, path, *bytes);
}

}  // namespace sluice
