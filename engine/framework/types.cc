// DataType names, sizes and classification.
#include "engine/framework/types.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

struct TypeInfo {
  DataType dtype;
  const char* name;
  int size;
};

constexpr TypeInfo kTypeInfo[] = {
    {DT_FLOAT, "float", 4},       {DT_DOUBLE, "double", 8},
    {DT_INT32, "int32", 4},       {DT_UINT8, "uint8", 1},
    {DT_INT16, "int16", 2},       {DT_INT8, "int8", 1},
    {DT_STRING, "string", 0},     {DT_COMPLEX64, "complex64", 8},
    {DT_INT64, "int64", 8},       {DT_BOOL, "bool", 1},
    {DT_BFLOAT16, "bfloat16", 2}, {DT_UINT16, "uint16", 2},
    {DT_HALF, "half", 2},
};

const TypeInfo* Find(DataType dtype) {
  for (const TypeInfo& info : kTypeInfo) {
    if (info.dtype == dtype) return &info;
  }
  return nullptr;
}

}  // namespace

std::string DataTypeString(DataType dtype) {
  if (IsRefType(dtype)) {
    // One level of "_ref". A bigger number (a corrupt or hostile enum value
    // from a proto) names no type: recursing once per hundred would overflow
    // the stack for 2^31 - 1.
    const DataType base = BaseType(dtype);
    if (!IsRefType(base)) return DataTypeString(base) + "_ref";
    return absl::StrCat("unsupported_dtype(", static_cast<int>(dtype), ")");
  }
  if (const TypeInfo* info = Find(dtype)) return info->name;
  if (dtype == DT_INVALID) return "invalid";
  if (dtype == DT_RESOURCE) return "resource";
  return absl::StrCat("unsupported_dtype(", static_cast<int>(dtype), ")");
}

absl::StatusOr<DataType> DataTypeFromString(absl::string_view name) {
  for (const TypeInfo& info : kTypeInfo) {
    if (name == info.name) return info.dtype;
  }
  if (name == "float32") return DT_FLOAT;
  if (name == "float64") return DT_DOUBLE;
  if (name == "float16") return DT_HALF;
  if (name == "resource") return DT_RESOURCE;
  return absl::InvalidArgumentError(absl::StrCat("unknown data type '", name, "'"));
}

int DataTypeSize(DataType dtype) {
  const TypeInfo* info = Find(dtype);
  return info == nullptr ? 0 : info->size;
}

bool DataTypeIsSupported(DataType dtype) { return Find(dtype) != nullptr; }

const std::vector<DataType>& AllSupportedTypes() {
  static const std::vector<DataType>* types = [] {
    auto* v = new std::vector<DataType>;
    for (const TypeInfo& info : kTypeInfo) v->push_back(info.dtype);
    std::sort(v->begin(), v->end());
    return v;
  }();
  return *types;
}

bool DataTypeIsFloating(DataType dtype) {
  return dtype == DT_FLOAT || dtype == DT_DOUBLE || dtype == DT_HALF || dtype == DT_BFLOAT16;
}

bool DataTypeIsInteger(DataType dtype) {
  return dtype == DT_INT8 || dtype == DT_INT16 || dtype == DT_INT32 || dtype == DT_INT64 ||
         dtype == DT_UINT8 || dtype == DT_UINT16;
}

}  // namespace sluice
