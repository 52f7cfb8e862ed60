// BuildLstm (models/lstm_layer.h) and BuildGru (models/gru_layer.h): their
// outputs equal the cell computed step by step here, for the whole sequence
// and for the last step only, with the number of steps taken from the input
// at run time (two lengths through one graph); and their gradients with
// respect to the input, both kernels and the biases match central finite
// differences in float64 through the time loop.
#include "models/gru_layer.h"
#include "models/lstm_layer.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/graph/gradients.h"
#include "engine/graph/graph.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

constexpr int kFeatures = 3, kUnits = 2, kBatch = 2;

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// h for every step: [batch][time][units], computed directly.
std::vector<double> ReferenceLstm(const std::vector<double>& x, int time, const std::vector<double>& kernel,
                                  const std::vector<double>& recurrent, const std::vector<double>& bias,
                                  double forget_bias) {
  std::vector<double> out(kBatch * time * kUnits);
  for (int n = 0; n < kBatch; ++n) {
    std::vector<double> h(kUnits, 0), c(kUnits, 0);
    for (int t = 0; t < time; ++t) {
      std::vector<double> z(4 * kUnits);
      for (int j = 0; j < 4 * kUnits; ++j) {
        double s = bias[j];
        for (int f = 0; f < kFeatures; ++f) s += x[(n * time + t) * kFeatures + f] * kernel[f * 4 * kUnits + j];
        for (int u = 0; u < kUnits; ++u) s += h[u] * recurrent[u * 4 * kUnits + j];
        z[j] = s;
      }
      for (int u = 0; u < kUnits; ++u) {
        const double i = z[u], f = z[kUnits + u], g = z[2 * kUnits + u], o = z[3 * kUnits + u];
        c[u] = Sigmoid(f + forget_bias) * c[u] + Sigmoid(i) * std::tanh(g);
        h[u] = Sigmoid(o) * std::tanh(c[u]);
        out[(n * time + t) * kUnits + u] = h[u];
      }
    }
  }
  return out;
}

// h for every step of a GRU (gates r, z, n; gru_layer.h): [batch][time][units].
std::vector<double> ReferenceGru(const std::vector<double>& x, int time, const std::vector<double>& kernel,
                                 const std::vector<double>& recurrent, const std::vector<double>& bias,
                                 const std::vector<double>& recurrent_bias) {
  std::vector<double> out(kBatch * time * kUnits);
  for (int n = 0; n < kBatch; ++n) {
    std::vector<double> h(kUnits, 0);
    for (int t = 0; t < time; ++t) {
      std::vector<double> xp(3 * kUnits), hp(3 * kUnits);
      for (int j = 0; j < 3 * kUnits; ++j) {
        xp[j] = bias[j];
        for (int f = 0; f < kFeatures; ++f) xp[j] += x[(n * time + t) * kFeatures + f] * kernel[f * 3 * kUnits + j];
        hp[j] = recurrent_bias[j];
        for (int u = 0; u < kUnits; ++u) hp[j] += h[u] * recurrent[u * 3 * kUnits + j];
      }
      std::vector<double> next(kUnits);
      for (int u = 0; u < kUnits; ++u) {
        const double r = Sigmoid(xp[u] + hp[u]), z = Sigmoid(xp[kUnits + u] + hp[kUnits + u]);
        const double c = std::tanh(xp[2 * kUnits + u] + r * hp[2 * kUnits + u]);
        next[u] = (1 - z) * c + z * h[u];
        out[(n * time + t) * kUnits + u] = next[u];
      }
      h = next;
    }
  }
  return out;
}

enum class Cell { kLstm, kGru };

class RecurrentLayerTest : public ::testing::TestWithParam<Cell> {
 protected:
  RecurrentLayerTest() : b_(&graph_), gates_(GetParam() == Cell::kLstm ? 4 : 3) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-0.8, 0.8);
    for (int i = 0; i < kFeatures * gates_ * kUnits; ++i) kernel_.push_back(u(rng));
    for (int i = 0; i < kUnits * gates_ * kUnits; ++i) recurrent_.push_back(u(rng));
    for (int i = 0; i < gates_ * kUnits; ++i) bias_.push_back(u(rng) * 0.3);
    for (int i = 0; i < gates_ * kUnits; ++i) recurrent_bias_.push_back(u(rng) * 0.3);
    for (int i = 0; i < kBatch * 5 * kFeatures; ++i) x_.push_back(u(rng));
  }
  std::vector<double> Reference(const std::vector<double>& x, int time) const {
    return GetParam() == Cell::kLstm ? ReferenceLstm(x, time, kernel_, recurrent_, bias_, 0.7f)
                                     : ReferenceGru(x, time, kernel_, recurrent_, bias_, recurrent_bias_);
  }
  Output Placeholder(const std::string& name) {
    return b_.Op(name, "Placeholder", {}, {{"dtype", MakeAttr(DT_DOUBLE)}});
  }
  Output Build(bool last_only) {
    x_in_ = Placeholder("x");
    params_ = {x_in_, Placeholder("kernel"), Placeholder("recurrent"), Placeholder("bias")};
    absl::StatusOr<Output> out;
    if (GetParam() == Cell::kLstm) {
      LstmOptions options;
      options.features = kFeatures;
      options.units = kUnits;
      options.forget_bias = 0.7f;
      options.last_only = last_only;
      options.parallel_iterations = 4;
      out = BuildLstm(&b_, x_in_, LstmWeights{params_[1], params_[2], params_[3]}, options);
    } else {
      params_.push_back(Placeholder("recurrent_bias"));
      GruOptions options;
      options.features = kFeatures;
      options.units = kUnits;
      options.last_only = last_only;
      options.parallel_iterations = 4;
      out = BuildGru(&b_, x_in_, GruWeights{params_[1], params_[2], params_[3], params_[4]}, options);
    }
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : Output();
  }
  std::vector<std::pair<std::string, Tensor>> Feeds(int time) const {
    std::vector<double> x(x_.begin(), x_.begin() + kBatch * time * kFeatures);
    std::vector<std::pair<std::string, Tensor>> feeds = {
        {"x", Tensor::FromVector<double>(x, TensorShape({kBatch, time, kFeatures}))},
        {"kernel", Tensor::FromVector<double>(kernel_, TensorShape({kFeatures, gates_ * kUnits}))},
        {"recurrent", Tensor::FromVector<double>(recurrent_, TensorShape({kUnits, gates_ * kUnits}))},
        {"bias", Tensor::FromVector<double>(bias_, TensorShape({gates_ * kUnits}))}};
    if (GetParam() == Cell::kGru) {
      feeds.emplace_back("recurrent_bias", Tensor::FromVector<double>(recurrent_bias_, TensorShape({gates_ * kUnits})));
    }
    return feeds;
  }
  void Start() {
    ASSERT_TRUE(b_.ok()) << b_.status();
    GraphDef def;
    graph_.ToGraphDef(&def);
    auto s = NewSession(SessionOptions());
    ASSERT_TRUE(s.ok()) << s.status();
    session_ = std::move(s).value();
    absl::Status created = session_->Create(def);
    ASSERT_TRUE(created.ok()) << created;
  }
  std::vector<Tensor> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches) {
    std::vector<Tensor> out;
    absl::Status s = session_->Run(feeds, fetches, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }

  Graph graph_;
  GraphBuilder b_;
  std::unique_ptr<Session> session_;
  const int gates_;
  Output x_in_;
  std::vector<Output> params_;  // what the feeds feed: x, kernel, recurrent, bias(es)
  std::vector<double> kernel_, recurrent_, bias_, recurrent_bias_, x_;
};

TEST_P(RecurrentLayerTest, SequenceOutputsMatchAStepByStepCellForAnyLength) {
  Output out = Build(false);
  Start();
  for (int time : {5, 2}) {
    std::vector<Tensor> got = Run(Feeds(time), {out.name()});
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].shape(), TensorShape({kBatch, time, kUnits}));
    std::vector<double> x(x_.begin(), x_.begin() + kBatch * time * kFeatures);
    std::vector<double> want = Reference(x, time);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[0].data<double>()[i], want[i], 1e-12) << time << " " << i;
  }
}

TEST_P(RecurrentLayerTest, LastOnlyIsTheFinalStep) {
  Output out = Build(true);
  Start();
  std::vector<Tensor> got = Run(Feeds(4), {out.name()});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].shape(), TensorShape({kBatch, kUnits}));
  std::vector<double> x(x_.begin(), x_.begin() + kBatch * 4 * kFeatures);
  std::vector<double> want = Reference(x, 4);
  for (int n = 0; n < kBatch; ++n) {
    for (int u = 0; u < kUnits; ++u) EXPECT_NEAR(got[0].data<double>()[n * kUnits + u], want[(n * 4 + 3) * kUnits + u], 1e-12);
  }
}

TEST_P(RecurrentLayerTest, GradientsMatchFiniteDifferences) {
  Output out = Build(false);
  // y = sum(out * weights): every step's output counts, with its own weight.
  std::vector<double> w;
  for (int i = 0; i < kBatch * 4 * kUnits; ++i) w.push_back(0.3 + 0.1 * i);
  Output weights = b_.Const("loss_weights", Tensor::FromVector<double>(w, TensorShape({kBatch, 4, kUnits})));
  Output y = b_.Op("y", "Sum", {b_.Op("weighted", "Mul", {out, weights}),
                                b_.Const("axes", Tensor::FromVector<int32_t>({0, 1, 2}))});
  const std::vector<Output> xs = params_;
  std::vector<Gradient> grads;
  absl::Status s = AddSymbolicGradients(&graph_, {y}, xs, {}, &grads);
  ASSERT_TRUE(s.ok()) << s;
  std::vector<std::string> fetches;
  for (size_t i = 0; i < grads.size(); ++i) {
    const Gradient& g = grads[i];
    ASSERT_TRUE(g.present()) << xs[i].name();
    fetches.push_back(DenseGradient(&b_, g).name());
  }
  Start();
  const auto feeds = Feeds(4);
  std::vector<Tensor> analytic = Run(feeds, fetches);
  ASSERT_EQ(analytic.size(), xs.size());
  const double eps = 1e-6;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& base = feeds[i].second;
    ASSERT_EQ(analytic[i].NumElements(), base.NumElements());
    for (int64_t e = 0; e < base.NumElements(); ++e) {
      auto at = [&](double delta) {
        auto f = feeds;
        std::vector<double> v(base.data<double>(), base.data<double>() + base.NumElements());
        v[e] += delta;
        f[i].second = Tensor::FromVector<double>(v, base.shape());
        return Run(f, {y.name()})[0].data<double>()[0];
      };
      const double numeric = (at(eps) - at(-eps)) / (2 * eps);
      EXPECT_NEAR(analytic[i].data<double>()[e], numeric, 1e-6 * std::max(1.0, std::fabs(numeric)))
          << xs[i].name() << "[" << e << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, RecurrentLayerTest, ::testing::Values(Cell::kLstm, Cell::kGru),
                         [](const ::testing::TestParamInfo<Cell>& info) {
                           return info.param == Cell::kLstm ? "Lstm" : "Gru";
                         });

}  // namespace
}  // namespace sluice
