// The augment layer (configs/experiment.proto) in a whole training graph on
// the real Fashion-MNIST pipeline: every image a training step trains on is
// the batch's image flipped or not and shifted within max_shift (zero where
// the shift leaves the image), few are left unchanged, each place in the
// batch draws anew from step to step, and the evaluation tower passes its images through
// unchanged. Skips when the Debian data set is not installed.
#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "configs/load.h"
#include "gtest/gtest.h"
#include "tests/training_graph_testlib.h"

namespace sluice {
namespace {

constexpr int kSide = 28, kShift = 3, kBatch = 64;

std::string Config() {
  return absl::StrCat(R"(
name: "augment"
model {
  layer { name: "augmented" input: "image" augment { flip_left_right: true max_shift: 3 } }
  layer { name: "flat" input: "augmented" flatten {} }
  layer { name: "logits" input: "flat" dense { units: 10 } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
}
)", training_graph_test::FashionMnistInput(), R"(
optimizer { sgd { learning_rate: 0.1 } }
train { steps: 10 deterministic: true }
)");
}

// Image n of [N, 28, 28, 1] `in` flipped (or not) and shifted by (dy, dx).
std::vector<float> Transformed(const Tensor& in, int64_t n, bool flip, int dy, int dx) {
  const float* image = in.data<float>() + n * kSide * kSide;
  std::vector<float> out(kSide * kSide, 0.0f);
  for (int r = 0; r < kSide; ++r) {
    for (int c = 0; c < kSide; ++c) {
      const int sr = r + dy, sc = c + dx;
      if (sr >= 0 && sr < kSide && sc >= 0 && sc < kSide) out[r * kSide + c] = image[sr * kSide + (flip ? kSide - 1 - sc : sc)];
    }
  }
  return out;
}

bool ImageEquals(const Tensor& t, int64_t n, const std::vector<float>& want) {
  const float* got = t.data<float>() + n * kSide * kSide;
  return std::equal(want.begin(), want.end(), got);
}

using AugmentLayerTest = training_graph_test::FashionMnistTest;

TEST_F(AugmentLayerTest, TrainsOnFlippedAndShiftedImagesAndEvaluatesOnTheImages) {
  auto loaded = config::ParseExperiment("augment.pbtxt", Config());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  models::TrainingGraph tg;
  absl::Status built = training_graph_test::BuildTrainingGraphOf(loaded->get(), {}, &tg);
  ASSERT_TRUE(built.ok()) << built;
  auto started = training_graph_test::TrainingSession::Start(tg, /*inter_op_threads=*/1);
  ASSERT_TRUE(started.ok()) << started.status();
  Session* session = (*started)->session();
  std::vector<Tensor> out;

  const std::string image = tg.train_input.features.at("image").tensor;
  int unchanged = 0, flipped = 0, shifted = 0, examples = 0;
  // The (flip, dy, dx) found for each place in the batch, per step.
  std::vector<std::vector<std::array<int, 3>>> draws;
  Tensor last_image;
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(absl::StrCat("step ", step));
    ASSERT_TRUE(session->Run({{tg.learning_rate, Tensor::Scalar<float>(0.1f)}}, {image, "augmented"}, {tg.train_op}, &out)
                    .ok());
    ASSERT_EQ(out[0].shape(), TensorShape({kBatch, kSide, kSide, 1}));
    ASSERT_EQ(out[1].shape(), out[0].shape());
    last_image = out[0];
    draws.emplace_back();
    for (int64_t n = 0; n < kBatch; ++n, ++examples) {
      // The first (flip, dy, dx) that gives the trained-on image; Fashion-MNIST's
      // zero borders may let several match.
      bool found = false;
      for (int flip = 0; flip < 2 && !found; ++flip) {
        for (int dy = -kShift; dy <= kShift && !found; ++dy) {
          for (int dx = -kShift; dx <= kShift && !found; ++dx) {
            if (!ImageEquals(out[1], n, Transformed(out[0], n, flip == 1, dy, dx))) continue;
            found = true;
            draws.back().push_back({flip, dy, dx});
            if (flip == 0 && dy == 0 && dx == 0) ++unchanged;
            if (flip == 1) ++flipped;
            if (dy != 0 || dx != 0) ++shifted;
          }
        }
      }
      ASSERT_TRUE(found) << "example " << n << " is no flip and shift of the batch's image";
    }
  }
  // Unchanged with probability 1/2 * 1/49 (a flip or shift of an image that
  // happens to equal it aside).
  EXPECT_LT(unchanged, examples / 10) << unchanged << " of " << examples;
  EXPECT_GT(flipped, examples / 4) << flipped << " of " << examples;
  EXPECT_GT(shifted, examples / 2) << shifted << " of " << examples;
  // A place in the batch draws anew at every step (the same draw with
  // probability 1/98, or a flip and shift that happen to match two ways).
  for (size_t step = 1; step < draws.size(); ++step) {
    int same = 0;
    for (int64_t n = 0; n < kBatch; ++n) same += draws[step][n] == draws[step - 1][n];
    EXPECT_LT(same, kBatch / 4) << "steps " << step - 1 << " and " << step << " drew alike";
  }

  // The evaluation tower passes its images through.
  const std::string eval_image = tg.eval_input.features.at("image").tensor;
  ASSERT_TRUE(session->Run({{eval_image, last_image}}, {"eval/augmented"}, {}, &out).ok());
  for (int64_t n = 0; n < kBatch; ++n) {
    ASSERT_TRUE(ImageEquals(out[0], n, Transformed(last_image, n, false, 0, 0))) << "eval example " << n;
  }
}

}  // namespace
}  // namespace sluice
