// The batch_norm, add and concat layers (configs/experiment.proto) in a whole
// training graph on the real Fashion-MNIST pipeline: a training step
// normalizes by the batch's own statistics, the moving mean and variance
// follow them by the configured momentum (the variance unbiased) with every
// step and are not trained, the evaluation tower normalizes by the moving
// statistics, and add and concat compute what they say. Every expected value
// is computed here in double from tensors the step itself fetched. Besides
// the [batch, features] case, the images themselves ([batch, 28, 28, 1]) and
// their rows ([batch, 28, 28]: 28 features per position) pass through
// batch_norm layers without gamma and beta, whose moving statistics are
// checked the same way. Skips when the Debian data set is not installed.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "configs/load.h"
#include "gtest/gtest.h"
#include "tests/training_graph_testlib.h"

namespace sluice {
namespace {

constexpr int kFeatures = 6;
constexpr double kMomentum = 0.75, kEpsilon = 0.01;

std::string Config() {
  return absl::StrCat(R"(
name: "bn"
model {
  layer { name: "flat" input: "image" flatten {} }
  layer { name: "fc" input: "flat" dense { units: 6 } }
  layer { name: "bn" input: "fc" batch_norm { momentum: 0.75 epsilon: 0.01 } }
  layer { name: "side" input: "flat" dense { units: 6 activation: TANH } }
  layer { name: "sum" input: "bn" input: "side" add { activation: RELU } }
  layer { name: "both" input: "sum" input: "fc" concat {} }
  layer { name: "logits" input: "both" dense { units: 10 } }
  layer { name: "pixels_bn" input: "image" batch_norm { momentum: 0.75 epsilon: 0.01 no_scale: true no_center: true } }
  layer { name: "rows" input: "image" reshape { shape: [28, 28] } }
  layer { name: "rows_bn" input: "rows" batch_norm { momentum: 0.75 epsilon: 0.01 no_scale: true no_center: true } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
}
)", training_graph_test::FashionMnistInput(), R"(
optimizer { sgd { learning_rate: 0.5 } }
train { steps: 10 deterministic: true }
)");
}

// [rows, cols] floats as doubles.
std::vector<double> Doubles(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<double>(p, p + t.NumElements());
}

// Per-column mean and biased variance of [rows, width].
void Moments(const std::vector<double>& x, std::vector<double>* mean, std::vector<double>* var,
             int width = kFeatures) {
  const size_t rows = x.size() / width;
  mean->assign(width, 0);
  var->assign(width, 0);
  for (size_t r = 0; r < rows; ++r)
    for (int c = 0; c < width; ++c) (*mean)[c] += x[r * width + c] / rows;
  for (size_t r = 0; r < rows; ++r)
    for (int c = 0; c < width; ++c) (*var)[c] += std::pow(x[r * width + c] - (*mean)[c], 2) / rows;
}

// gamma * (x - mean) / sqrt(var + epsilon) + beta, column by column.
std::vector<double> Normalized(const std::vector<double>& x, const std::vector<double>& mean,
                               const std::vector<double>& var, const std::vector<double>& gamma,
                               const std::vector<double>& beta) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = static_cast<int>(i % kFeatures);
    y[i] = gamma[c] * (x[i] - mean[c]) / std::sqrt(var[c] + kEpsilon) + beta[c];
  }
  return y;
}

void ExpectNear(const Tensor& got, const std::vector<double>& want, double tolerance, const std::string& what) {
  ASSERT_EQ(static_cast<size_t>(got.NumElements()), want.size()) << what;
  const float* p = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(p[i], want[i], tolerance * std::max(1.0, std::fabs(want[i]))) << what << " element " << i;
  }
}

using BatchNormLayerTest = training_graph_test::FashionMnistTest;

TEST_F(BatchNormLayerTest, TrainsOnBatchStatisticsAndEvaluatesOnMovingOnes) {
  auto loaded = config::ParseExperiment("bn.pbtxt", Config());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  models::TrainingGraph tg;
  absl::Status built = training_graph_test::BuildTrainingGraphOf(loaded->get(), {}, &tg);
  ASSERT_TRUE(built.ok()) << built;

  // gamma and beta train; the moving statistics are model state without a
  // gradient (checkpointed and warm-started as the model's, not slots).
  std::map<std::string, const models::VariableSummary*> variables;
  for (const auto& v : tg.variables) variables[v.name] = &v;
  std::map<std::string, std::string> gradients(tg.gradients.begin(), tg.gradients.end());
  for (const char* name : {"bn/gamma", "bn/beta"}) {
    ASSERT_TRUE(variables.count(name)) << name;
    EXPECT_TRUE(variables[name]->trainable) << name;
    EXPECT_TRUE(gradients.count(name)) << name;
  }
  // No gamma and beta where no_scale and no_center say so.
  for (const char* name : {"pixels_bn/gamma", "pixels_bn/beta", "rows_bn/gamma", "rows_bn/beta"}) {
    EXPECT_FALSE(variables.count(name)) << name;
  }
  for (const char* name : {"bn/moving_mean", "bn/moving_variance"}) {
    ASSERT_TRUE(variables.count(name)) << name;
    EXPECT_FALSE(variables[name]->trainable) << name;
    EXPECT_FALSE(variables[name]->slot) << name;
    EXPECT_EQ(variables[name]->shape, TensorShape({kFeatures})) << name;
    EXPECT_FALSE(gradients.count(name)) << name;
  }

  auto started = training_graph_test::TrainingSession::Start(tg, /*inter_op_threads=*/1);
  ASSERT_TRUE(started.ok()) << started.status();
  Session* session = (*started)->session();
  std::vector<Tensor> out;

  const std::vector<std::string> state = {"bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance"};
  ASSERT_TRUE(session->Run({}, state, {}, &out).ok());
  std::vector<double> moving_mean = Doubles(out[2]), moving_var = Doubles(out[3]);
  for (int c = 0; c < kFeatures; ++c) {
    ASSERT_EQ(moving_mean[c], 0.0);
    ASSERT_EQ(moving_var[c], 1.0);
  }
  const std::string image = tg.train_input.features.at("image").tensor;
  Tensor last_image;
  // The images' batch norms: one channel over every pixel, and 28 (a row's
  // columns) over every row of every image.
  const std::vector<std::string> image_state = {"pixels_bn/moving_mean", "pixels_bn/moving_variance",
                                                "rows_bn/moving_mean", "rows_bn/moving_variance"};
  std::vector<double> pixel_mean = {0.0}, pixel_var = {1.0}, row_mean(28, 0.0), row_var(28, 1.0);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(absl::StrCat("step ", step));
    ASSERT_TRUE(session->Run({}, state, {}, &out).ok());
    const std::vector<double> gamma = Doubles(out[0]), beta = Doubles(out[1]);
    ASSERT_TRUE(session->Run({{tg.learning_rate, Tensor::Scalar<float>(0.5f)}}, {image, "fc", "bn", "side", "sum", "both"},
                             {tg.train_op}, &out)
                    .ok());
    last_image = out[0];
    const std::vector<double> fc = Doubles(out[1]), side = Doubles(out[3]), sum_got = Doubles(out[4]);
    std::vector<double> mean, var;
    Moments(fc, &mean, &var);
    // A training step normalizes by the batch's statistics.
    ExpectNear(out[2], Normalized(fc, mean, var, gamma, beta), 1e-4, "bn");
    // add: relu(bn + side); concat: [sum, fc] row by row.
    std::vector<double> sum(fc.size()), both;
    const std::vector<double> bn = Doubles(out[2]);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = std::max(0.0, bn[i] + side[i]);
    ExpectNear(out[4], sum, 1e-6, "sum");
    for (size_t r = 0; r < fc.size() / kFeatures; ++r) {
      both.insert(both.end(), sum_got.begin() + r * kFeatures, sum_got.begin() + (r + 1) * kFeatures);
      both.insert(both.end(), fc.begin() + r * kFeatures, fc.begin() + (r + 1) * kFeatures);
    }
    ExpectNear(out[5], both, 0, "both");
    // The moving statistics followed the batch's (its variance unbiased).
    const double n = static_cast<double>(fc.size() / kFeatures);
    for (int c = 0; c < kFeatures; ++c) {
      moving_mean[c] = kMomentum * moving_mean[c] + (1 - kMomentum) * mean[c];
      moving_var[c] = kMomentum * moving_var[c] + (1 - kMomentum) * var[c] * n / (n - 1);
    }
    ASSERT_TRUE(session->Run({}, state, {}, &out).ok());
    ExpectNear(out[2], moving_mean, 1e-5, "moving_mean");
    ExpectNear(out[3], moving_var, 1e-5, "moving_variance");
    const std::vector<double> pixels = Doubles(last_image);
    for (int width : {1, 28}) {
      std::vector<double>& mean_of = width == 1 ? pixel_mean : row_mean;
      std::vector<double>& var_of = width == 1 ? pixel_var : row_var;
      const double count = static_cast<double>(pixels.size() / width);
      std::vector<double> batch_mean, batch_var;
      Moments(pixels, &batch_mean, &batch_var, width);
      for (int c = 0; c < width; ++c) {
        mean_of[c] = kMomentum * mean_of[c] + (1 - kMomentum) * batch_mean[c];
        var_of[c] = kMomentum * var_of[c] + (1 - kMomentum) * batch_var[c] * count / (count - 1);
      }
    }
    ASSERT_TRUE(session->Run({}, image_state, {}, &out).ok());
    ExpectNear(out[0], pixel_mean, 1e-5, "pixels_bn/moving_mean");
    ExpectNear(out[1], pixel_var, 1e-5, "pixels_bn/moving_variance");
    ExpectNear(out[2], row_mean, 1e-5, "rows_bn/moving_mean");
    ExpectNear(out[3], row_var, 1e-5, "rows_bn/moving_variance");
    if (HasFailure()) break;
  }

  // The evaluation tower normalizes by the moving statistics: fed the last
  // training batch, its normalized values differ from the batch-normalized ones.
  ASSERT_TRUE(session->Run({}, state, {}, &out).ok());
  const std::vector<double> gamma = Doubles(out[0]), beta = Doubles(out[1]);
  const std::string eval_image = tg.eval_input.features.at("image").tensor;
  ASSERT_TRUE(session->Run({{eval_image, last_image}}, {"eval/fc", "eval/bn"}, {}, &out).ok());
  const std::vector<double> fc = Doubles(out[0]);
  ExpectNear(out[1], Normalized(fc, moving_mean, moving_var, gamma, beta), 1e-4, "eval/bn");
  std::vector<double> mean, var;
  Moments(fc, &mean, &var);
  const std::vector<double> batch_normalized = Normalized(fc, mean, var, gamma, beta);
  const std::vector<double> eval_bn = Doubles(out[1]);
  double largest = 0;
  for (size_t i = 0; i < fc.size(); ++i) largest = std::max(largest, std::fabs(eval_bn[i] - batch_normalized[i]));
  EXPECT_GT(largest, 0.05) << "the evaluation tower normalized by the batch's statistics";
}

}  // namespace
}  // namespace sluice
