// DataType helpers: names, sizes, reference types and the C++ type <-> enum
// mapping. The enum itself is the proto enum `sluice::DataType` (types.proto),
// which uses TensorFlow's values. Thread safety: everything here is pure.
#ifndef SLUICE_ENGINE_FRAMEWORK_TYPES_H_
#define SLUICE_ENGINE_FRAMEWORK_TYPES_H_

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/framework/resource_handle.h"
#include "engine/framework/types.pb.h"

namespace sluice {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;
using complex64 = std::complex<float>;
using tstring = std::string;

constexpr int kDataTypeRefOffset = 100;

inline bool IsRefType(DataType dtype) { return dtype > kDataTypeRefOffset; }
// DT_FLOAT_REF -> DT_FLOAT; a value type is returned unchanged.
inline DataType BaseType(DataType dtype) {
  return IsRefType(dtype) ? static_cast<DataType>(dtype - kDataTypeRefOffset) : dtype;
}
inline DataType MakeRefType(DataType dtype) {
  return IsRefType(dtype) ? dtype : static_cast<DataType>(dtype + kDataTypeRefOffset);
}

// "float", "int32", "float_ref"... the spelling TensorFlow uses in op specs.
std::string DataTypeString(DataType dtype);
// Parses the spelling above (without "_ref"); InvalidArgument otherwise.
absl::StatusOr<DataType> DataTypeFromString(absl::string_view name);

// Bytes per element of a fixed-size type; 0 for DT_STRING and unsupported types.
int DataTypeSize(DataType dtype);
// True for the value types Sluice can hold in a Tensor (numbers and strings:
// what protos, checkpoints and the wire carry). DT_RESOURCE is not one.
bool DataTypeIsSupported(DataType dtype);
// The types a graph edge may carry and a Tensor may hold: the supported
// value types and DT_RESOURCE (handles, ResourceHandle, process-local).
inline bool DataTypeCanFlow(DataType dtype) { return dtype == DT_RESOURCE || DataTypeIsSupported(dtype); }
// Every value type Sluice supports, in enum order.
const std::vector<DataType>& AllSupportedTypes();
bool DataTypeIsFloating(DataType dtype);
bool DataTypeIsInteger(DataType dtype);

// DataTypeToEnum<float>::value == DT_FLOAT, and so on.
template <typename T>
struct DataTypeToEnum;
#define SLUICE_MATCH_TYPE_AND_ENUM(TYPE, ENUM) \
  template <>                                  \
  struct DataTypeToEnum<TYPE> {                \
    static constexpr DataType value = ENUM;    \
  }
SLUICE_MATCH_TYPE_AND_ENUM(float, DT_FLOAT);
SLUICE_MATCH_TYPE_AND_ENUM(double, DT_DOUBLE);
SLUICE_MATCH_TYPE_AND_ENUM(int32_t, DT_INT32);
SLUICE_MATCH_TYPE_AND_ENUM(uint8_t, DT_UINT8);
SLUICE_MATCH_TYPE_AND_ENUM(uint16_t, DT_UINT16);
SLUICE_MATCH_TYPE_AND_ENUM(int16_t, DT_INT16);
SLUICE_MATCH_TYPE_AND_ENUM(int8_t, DT_INT8);
SLUICE_MATCH_TYPE_AND_ENUM(tstring, DT_STRING);
SLUICE_MATCH_TYPE_AND_ENUM(complex64, DT_COMPLEX64);
SLUICE_MATCH_TYPE_AND_ENUM(int64_t, DT_INT64);
SLUICE_MATCH_TYPE_AND_ENUM(bool, DT_BOOL);
SLUICE_MATCH_TYPE_AND_ENUM(bfloat16, DT_BFLOAT16);
SLUICE_MATCH_TYPE_AND_ENUM(half, DT_HALF);
SLUICE_MATCH_TYPE_AND_ENUM(ResourceHandle, DT_RESOURCE);
#undef SLUICE_MATCH_TYPE_AND_ENUM

// Calls `fn.template operator()<T>()`-style visitors: SLUICE_SWITCH_TYPE(dtype, T, body)
// runs `body` with `T` bound to the C++ type of `dtype`; `default_body` otherwise.
#define SLUICE_CASE_TYPE_(ENUM, TYPE, ...) \
  case ENUM: {                             \
    using T = TYPE;                        \
    __VA_ARGS__;                           \
    break;                                 \
  }
#define SLUICE_SWITCH_ALL_TYPES(dtype, default_body, ...)  \
  switch (dtype) {                                         \
    SLUICE_CASE_TYPE_(DT_FLOAT, float, __VA_ARGS__)        \
    SLUICE_CASE_TYPE_(DT_DOUBLE, double, __VA_ARGS__)      \
    SLUICE_CASE_TYPE_(DT_INT32, int32_t, __VA_ARGS__)      \
    SLUICE_CASE_TYPE_(DT_UINT8, uint8_t, __VA_ARGS__)      \
    SLUICE_CASE_TYPE_(DT_UINT16, uint16_t, __VA_ARGS__)    \
    SLUICE_CASE_TYPE_(DT_INT16, int16_t, __VA_ARGS__)      \
    SLUICE_CASE_TYPE_(DT_INT8, int8_t, __VA_ARGS__)        \
    SLUICE_CASE_TYPE_(DT_STRING, tstring, __VA_ARGS__)     \
    SLUICE_CASE_TYPE_(DT_COMPLEX64, complex64, __VA_ARGS__) \
    SLUICE_CASE_TYPE_(DT_INT64, int64_t, __VA_ARGS__)      \
    SLUICE_CASE_TYPE_(DT_BOOL, bool, __VA_ARGS__)          \
    SLUICE_CASE_TYPE_(DT_BFLOAT16, bfloat16, __VA_ARGS__)  \
    SLUICE_CASE_TYPE_(DT_HALF, half, __VA_ARGS__)          \
    default: {                                             \
      default_body;                                        \
    }                                                      \
  }

// Device type names used by the kernel registry.
inline constexpr char kDeviceCpu[] = "CPU";
inline constexpr char kDeviceGpu[] = "GPU";

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_TYPES_H_
