// The training step of configs/fashion_mlp.pbtxt checked against a float64
// reference written here: for each of many steps on the real Fashion-MNIST
// pipeline, the batch and the variables are fetched, the loss and every
// gradient are recomputed in double (dense -> ReLU -> dense -> ReLU -> dense ->
// mean softmax cross-entropy), and the step's own loss and gradients must
// agree. Plain SGD at learning rate 0.05 must also train without diverging.
// This is the regression test for a divergence to NaN once seen at this
// learning rate. Skips when the Debian data set is not installed.
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "configs/load.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"
#include "tests/training_graph_testlib.h"

namespace sluice {
namespace {

// Row-major dense matrix of doubles.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Mat() = default;
  Mat(int64_t r, int64_t c) : rows(r), cols(c), v(r * c, 0.0) {}
  double& at(int64_t r, int64_t c) { return v[r * cols + c]; }
  double at(int64_t r, int64_t c) const { return v[r * cols + c]; }
};

Mat FromTensor(const Tensor& t, int64_t rows) {
  Mat m(rows, t.NumElements() / rows);
  const float* p = t.flat<float>().data();
  for (int64_t i = 0; i < t.NumElements(); ++i) m.v[i] = p[i];
  return m;
}

Mat MatMul(const Mat& a, const Mat& b, bool ta = false, bool tb = false) {
  const int64_t n = ta ? a.cols : a.rows, k = ta ? a.rows : a.cols, m = tb ? b.rows : b.cols;
  Mat c(n, m);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < k; ++p) {
      const double x = ta ? a.at(p, i) : a.at(i, p);
      if (x == 0) continue;
      for (int64_t j = 0; j < m; ++j) c.at(i, j) += x * (tb ? b.at(j, p) : b.at(p, j));
    }
  }
  return c;
}

void AddBias(const Mat& bias, Mat* x) {
  for (int64_t i = 0; i < x->rows; ++i)
    for (int64_t j = 0; j < x->cols; ++j) x->at(i, j) += bias.v[j];
}

Mat ColumnSums(const Mat& x) {
  Mat s(1, x.cols);
  for (int64_t i = 0; i < x.rows; ++i)
    for (int64_t j = 0; j < x.cols; ++j) s.v[j] += x.at(i, j);
  return s;
}

// Largest |a - b| / max(|b|, scale) over the elements, where `scale` is a
// tenth of b's largest magnitude (so tiny entries compare absolutely).
double MaxRelativeError(const Tensor& got, const Mat& want) {
  const float* p = got.flat<float>().data();
  double largest = 0;
  for (double w : want.v) largest = std::max(largest, std::fabs(w));
  const double floor = std::max(largest * 0.1, 1e-12);
  double worst = 0;
  for (size_t i = 0; i < want.v.size(); ++i) {
    worst = std::max(worst, std::fabs(p[i] - want.v[i]) / std::max(std::fabs(want.v[i]), floor));
  }
  return worst;
}

using TrainingStepReferenceTest = training_graph_test::FashionMnistTest;

TEST_F(TrainingStepReferenceTest, SgdStepsMatchFloat64ReferenceAndDoNotDiverge) {
  auto loaded = config::LoadExperimentFile("configs/fashion_mlp.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  models::TrainingGraph tg;
  absl::Status built = training_graph_test::BuildTrainingGraphOf(
      loaded->get(), {"optimizer.sgd={learning_rate: 0.05}", "train.deterministic=true"}, &tg);
  ASSERT_TRUE(built.ok()) << built;
  auto started = training_graph_test::TrainingSession::Start(tg, /*inter_op_threads=*/2);
  ASSERT_TRUE(started.ok()) << started.status();
  Session* session = (*started)->session();
  std::vector<Tensor> out;

  const std::vector<std::string> layers = {"fc1", "fc2", "logits"};
  std::vector<std::string> var_names;
  for (const auto& l : layers) {
    var_names.push_back(l + "/kernel");
    var_names.push_back(l + "/bias");
  }
  std::map<std::string, std::string> grad_of;
  for (const auto& [var, grad] : tg.gradients) grad_of[var] = grad;
  std::vector<std::string> step_fetches = {tg.train_input.features.at("image").tensor,
                                           tg.train_input.features.at("label").tensor, tg.loss};
  for (const auto& v : var_names) {
    ASSERT_TRUE(grad_of.count(v)) << v;
    step_fetches.push_back(grad_of[v]);
  }
  for (const char* n : {"fc1", "fc2", "logits"}) step_fetches.push_back(n);

  double first_loss = 0, last_loss = 0;
  constexpr int kSteps = 150;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<Tensor> vars;
    ASSERT_TRUE(session->Run({}, var_names, {}, &vars).ok());
    for (Tensor& v : vars) v = v.Clone();  // a fetched variable may share its buffer
    std::vector<Tensor> got;
    absl::Status s = session->Run({{tg.learning_rate, Tensor::Scalar<float>(0.05f)}}, step_fetches, {tg.train_op}, &got);
    ASSERT_TRUE(s.ok()) << s;
    const Tensor& image = got[0];
    const Tensor& label = got[1];
    const int64_t batch = image.dim_size(0);
    ASSERT_EQ(label.NumElements(), batch);
    Mat x = FromTensor(image, batch);
    for (double p : x.v) ASSERT_TRUE(p >= 0 && p <= 1) << "step " << step << ": pixel " << p << " outside [0, 1]";
    for (int64_t i = 0; i < batch; ++i) {
      ASSERT_TRUE(label.flat<int64_t>()(i) >= 0 && label.flat<int64_t>()(i) < 10) << "step " << step;
    }

    // Forward.
    std::vector<Mat> w, b;
    for (size_t l = 0; l < layers.size(); ++l) {
      w.push_back(FromTensor(vars[2 * l], vars[2 * l].dim_size(0)));
      b.push_back(FromTensor(vars[2 * l + 1], 1));
    }
    std::vector<Mat> act = {x};  // inputs of each layer
    for (size_t l = 0; l < layers.size(); ++l) {
      Mat z = MatMul(act.back(), w[l]);
      AddBias(b[l], &z);
      if (l + 1 < layers.size()) {
        for (double& e : z.v) e = std::max(e, 0.0);
      }
      act.push_back(z);
    }
    const Mat& logits = act.back();
    const char* activations[] = {"fc1", "fc2", "logits"};
    for (int k = 0; k < 3; ++k) {
      EXPECT_LT(MaxRelativeError(got[got.size() - 3 + k], act[k + 1]), 1e-4)
          << "step " << step << " activations of " << activations[k];
    }
    Mat dz(batch, logits.cols);
    double loss = 0;
    for (int64_t i = 0; i < batch; ++i) {
      double mx = -1e300;
      for (int64_t j = 0; j < logits.cols; ++j) mx = std::max(mx, logits.at(i, j));
      double sum = 0;
      for (int64_t j = 0; j < logits.cols; ++j) sum += std::exp(logits.at(i, j) - mx);
      const int64_t y = label.flat<int64_t>()(i);
      loss += (std::log(sum) + mx - logits.at(i, y)) / batch;
      for (int64_t j = 0; j < logits.cols; ++j) {
        dz.at(i, j) = (std::exp(logits.at(i, j) - mx) / sum - (j == y ? 1.0 : 0.0)) / batch;
      }
    }
    const float got_loss = got[2].scalar<float>();
    ASSERT_TRUE(std::isfinite(got_loss)) << "step " << step;
    EXPECT_NEAR(got_loss, loss, 1e-4 * std::max(1.0, loss)) << "step " << step;
    // Backward, through the step's own float activations, so a pre-activation
    // within rounding of 0 takes the same ReLU branch on both sides.
    act[1] = FromTensor(got[got.size() - 3], batch);
    act[2] = FromTensor(got[got.size() - 2], batch);
    Mat d = dz;
    for (int l = static_cast<int>(layers.size()) - 1; l >= 0; --l) {
      Mat dw = MatMul(act[l], d, /*ta=*/true);
      Mat db = ColumnSums(d);
      EXPECT_LT(MaxRelativeError(got[3 + 2 * l], dw), 1e-3) << "step " << step << " gradient of " << var_names[2 * l];
      EXPECT_LT(MaxRelativeError(got[4 + 2 * l], db), 1e-3)
          << "step " << step << " gradient of " << var_names[2 * l + 1];
      if (l == 0) break;
      Mat dx = MatMul(d, w[l], false, /*tb=*/true);
      for (size_t i = 0; i < dx.v.size(); ++i) {
        if (act[l].v[i] <= 0) dx.v[i] = 0;
      }
      d = dx;
    }
    if (::testing::Test::HasFailure()) break;
    if (step == 0) first_loss = got_loss;
    last_loss = got_loss;
  }
  EXPECT_LT(last_loss, first_loss * 0.6) << "SGD did not reduce the loss";
}

}  // namespace
}  // namespace sluice
