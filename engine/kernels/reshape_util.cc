// See reshape_util.h.
#include "engine/kernels/reshape_util.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/kernels/array_kernel_util.h"

namespace sluice {

absl::StatusOr<TensorShape> ReshapeOutputShape(const Tensor& shape_t, int64_t num_elements) {
  if (shape_t.dims() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape must be a vector, got shape ", shape_t.shape().DebugString()));
  }
  std::vector<int64_t> dims(shape_t.NumElements());
  int unknown = -1;
  int64_t product = 1;
  bool overflow = false;
  for (int64_t i = 0; i < shape_t.NumElements(); ++i) {
    dims[i] = array_util::IndexAt(shape_t, i);
    if (dims[i] == -1) {
      if (unknown >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("only one input size may be -1, not both ", unknown, " and ", i));
      }
      unknown = static_cast<int>(i);
    } else {
      if (dims[i] < 0) {
        return absl::InvalidArgumentError(absl::StrCat("dimension ", i, " is negative (", dims[i], ")"));
      }
      // Once over the limit, stop multiplying (a further product could overflow int64).
      if (overflow || (dims[i] != 0 && product > kMaxTensorElements / dims[i])) {
        overflow = true;
      } else {
        product *= dims[i];
      }
    }
  }
  if (overflow) return absl::InvalidArgumentError("requested shape overflows the maximum tensor size");
  if (unknown >= 0) {
    if (product <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("reshape cannot infer the missing input size for an empty tensor unless all specified input "
                       "sizes are non-zero (input has ",
                       num_elements, " values)"));
    }
    if (num_elements % product != 0) {
      return absl::InvalidArgumentError(absl::StrCat("input to reshape is a tensor with ", num_elements,
                                                     " values, which is not a multiple of ", product));
    }
    dims[unknown] = num_elements / product;
    product = num_elements;
  }
  if (product != num_elements) {
    return absl::InvalidArgumentError(absl::StrCat("input to reshape is a tensor with ", num_elements,
                                                   " values, but the requested shape has ", product));
  }
  return TensorShape::Build(dims);
}

}  // namespace sluice
