// The augment layer (configs/experiment.proto) in a whole training graph on
// the real Fashion-MNIST pipeline: every image a training step trains on is
// the batch's image flipped or not and shifted within max_shift (zero where
// the shift leaves the image), few are left unchanged, the draws differ from
// step to step, and the evaluation tower passes its images through
// unchanged. Skips when the Debian data set is not installed.
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "configs/load.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"
#include "models/training/input_hook.h"
#include "models/training_graph.h"

namespace sluice {
namespace {

constexpr char kImages[] = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
constexpr char kLabels[] = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz";
constexpr char kTestImages[] = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
constexpr char kTestLabels[] = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
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
input {
  train { idx { images: ")", kImages, R"(" labels: ")", kLabels, R"(" } scale_to_unit: true batch_size: 64 }
  eval { idx { images: ")", kTestImages, R"(" labels: ")", kTestLabels, R"(" } scale_to_unit: true batch_size: 50 }
}
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

class AugmentLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* path : {kImages, kTestImages}) {
      if (std::FILE* f = std::fopen(path, "rb")) {
        std::fclose(f);
      } else {
        GTEST_SKIP() << "Fashion-MNIST is not installed (" << path << ")";
      }
    }
  }
};

TEST_F(AugmentLayerTest, TrainsOnFlippedAndShiftedImagesAndEvaluatesOnTheImages) {
  auto loaded_or = config::ParseExperiment("augment.pbtxt", Config());
  ASSERT_TRUE(loaded_or.ok()) << loaded_or.status();
  config::LoadedExperiment& loaded = **loaded_or;
  config::ApplyDefaults(&loaded.experiment);
  config::ConfigErrors errors("augment.pbtxt");
  config::Validate(loaded, &errors);
  ASSERT_TRUE(errors.empty()) << errors.ToStatus();
  models::TrainingGraph tg;
  ASSERT_TRUE(models::BuildTrainingGraph(loaded, &tg, &errors).ok());
  ASSERT_TRUE(errors.empty()) << errors.ToStatus();

  SessionOptions options;
  options.inter_op_threads = 1;
  auto session_or = NewSession(options);
  ASSERT_TRUE(session_or.ok());
  std::unique_ptr<Session> session = std::move(session_or).value();
  ASSERT_TRUE(session->Create(tg.graph).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {tg.init_op}, &out).ok());
  training::InputHookOptions input_options;
  input_options.train = tg.train_input;
  std::ostringstream input_log;
  training::InputHook input(input_options, &input_log);
  ASSERT_TRUE(input.Begin(session.get(), training::LoopStart{}).ok());

  const std::string image = tg.train_input.features.at("image").tensor;
  int unchanged = 0, flipped = 0, shifted = 0, examples = 0;
  Tensor last_image;
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(absl::StrCat("step ", step));
    ASSERT_TRUE(session->Run({{tg.learning_rate, Tensor::Scalar<float>(0.1f)}}, {image, "augmented"}, {tg.train_op}, &out)
                    .ok());
    ASSERT_EQ(out[0].shape(), TensorShape({kBatch, kSide, kSide, 1}));
    ASSERT_EQ(out[1].shape(), out[0].shape());
    last_image = out[0];
    for (int64_t n = 0; n < kBatch; ++n, ++examples) {
      // The first (flip, dy, dx) that gives the trained-on image; Fashion-MNIST's
      // zero borders may let several match.
      bool found = false;
      for (int flip = 0; flip < 2 && !found; ++flip) {
        for (int dy = -kShift; dy <= kShift && !found; ++dy) {
          for (int dx = -kShift; dx <= kShift && !found; ++dx) {
            if (!ImageEquals(out[1], n, Transformed(out[0], n, flip == 1, dy, dx))) continue;
            found = true;
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

  // The evaluation tower passes its images through.
  const std::string eval_image = tg.eval_input.features.at("image").tensor;
  ASSERT_TRUE(session->Run({{eval_image, last_image}}, {"eval/augmented"}, {}, &out).ok());
  for (int64_t n = 0; n < kBatch; ++n) {
    ASSERT_TRUE(ImageEquals(out[0], n, Transformed(last_image, n, false, 0, 0))) << "eval example " << n;
  }
  input.Close(training::LoopEnd{});
}

}  // namespace
}  // namespace sluice
