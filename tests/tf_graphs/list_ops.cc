// Prints every op type that `train` registers, one per line, as
// "<op>\t<kernel|no_kernel>" (whether some device has a kernel for it), with
// "\tsluice_only" after an op marked as one TensorFlow lacks: the
// Sluice side of the op census (census.py). Links the same op libraries as
// cmd/train.
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"

int main() {
  const std::vector<std::string> kernels = sluice::KernelRegistry::Global()->RegisteredOps();
  const std::set<std::string> with_kernel(kernels.begin(), kernels.end());
  for (const std::string& op : sluice::OpRegistry::Global()->ListOpNames()) {
    const sluice::OpDef* def = sluice::OpRegistry::Global()->LookUp(op);
    std::cout << op << '\t' << (with_kernel.count(op) ? "kernel" : "no_kernel")
              << (def != nullptr && def->sluice_only ? "\tsluice_only" : "") << '\n';
  }
  return 0;
}
