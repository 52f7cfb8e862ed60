// Helpers shared by session tests (fusion_session_test, onednn_session_test,
// winograd_session_test, pool_grad_fusion_session_test,
// batch_norm_fusion_session_test): seeded random inputs for graphs whose
// results are compared across session options, the comparison, and one run
// of a graph that also says which ops ran.
// Thread safety: free functions without shared state.
#ifndef SLUICE_ENGINE_RUNTIME_SESSION_TEST_UTIL_H_
#define SLUICE_ENGINE_RUNTIME_SESSION_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/framework/tensor.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {

// A float tensor of `shape`, uniform in [-1, 1) from `seed`.
inline Tensor RandomFloats(const TensorShape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t(DT_FLOAT, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = u(rng);
  return t;
}

// How far two float tensors of one shape are apart: the largest difference
// and the largest magnitude in `reference`.
struct FloatDifference {
  double worst = 0, scale = 0;
};
inline FloatDifference CompareFloats(const Tensor& reference, const Tensor& other) {
  FloatDifference d;
  const float* a = reference.data<float>();
  const float* b = other.data<float>();
  for (int64_t j = 0; j < reference.NumElements(); ++j) {
    d.worst = std::max(d.worst, static_cast<double>(std::abs(a[j] - b[j])));
    d.scale = std::max(d.scale, static_cast<double>(std::abs(a[j])));
  }
  return d;
}

// One step of a graph: the fetched tensors and the op of every node that ran.
struct StepWithOps {
  std::vector<Tensor> outputs;
  std::multiset<std::string> ops;
};

// Runs `graph` once in a new session with `options`, collecting step stats;
// a failure is a test failure (and an empty result).
inline StepWithOps RunCollectingOps(const SessionOptions& options, const GraphDef& graph,
                                    const std::vector<std::pair<std::string, Tensor>>& feeds,
                                    const std::vector<std::string>& fetches) {
  StepWithOps step;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return step;
  absl::Status s = (*session)->Create(graph);
  EXPECT_TRUE(s.ok()) << s;
  RunOptions run;
  run.collect_step_stats = true;
  RunMetadata metadata;
  s = (*session)->Run(run, feeds, fetches, {}, &step.outputs, &metadata);
  EXPECT_TRUE(s.ok()) << s;
  for (const NodeExecStats& n : metadata.step_stats) step.ops.insert(n.op);
  return step;
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_SESSION_TEST_UTIL_H_
